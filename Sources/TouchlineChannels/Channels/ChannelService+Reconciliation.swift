import APNs
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Creates whose answer was lost (the process died between asking APNs and saving the id).
///
/// Such a channel is still `creating` in the store, and Apple may hold a channel for it that no
/// record accounts for (an orphan). At start-up, before new creates are taken, the gateway lists
/// the app's channels (each app's, with its own connections) and reads the storage policy of each orphan; each `creating` channel
/// adopts an orphan with its policy, or is created again if none is left, and orphans left over
/// are deleted at Apple. So no channel leaks toward Apple's limit (docs/storage.md). This
/// assumes the app's channels in this environment belong to this gateway alone.
extension ChannelService {
    /// For each app with such channels: lists its APNs channels, reads the policy of each orphan,
    /// and performs ``ChannelReconciliation``'s plan (adoptions, creates again, deletions of
    /// leftovers). Each app's channels are its own at APNs, so each is reconciled on its own.
    func reconcileLostCreates() {
        // A shadow channel has nothing at APNs to adopt: it is created again by the gateway.
        for channel in channels.values where channel.isShadow && channel.lifecycle.awaitsReconciliation { lifecycle(.recreate, of: channel) }
        let apps = Set(channels.values.filter { $0.lifecycle.awaitsReconciliation }.map(\.app))
        for app in apps.sorted() { reconcileLostCreates(ofApp: app) }
    }

    private func reconcileLostCreates(ofApp app: String) {
        reconcilingApps.insert(app)
        let dispatcher = dispatcher(ofApp: app)
        dispatcher.listChannels { [self] result in
            switch result {
            case .failure(let error):
                log.error("cannot list the APNs channels of app '\(app)' to reconcile lost creates", apnsID: error.requestID, error: error)
                reconcilingApps.remove(app)
            case .success(let listed):
                let accounted = Set(channels.values.filter { $0.app == app }.compactMap(\.apnsChannelID))
                let orphans = ChannelReconciliation.orphans(listed: listed, accounted: accounted)
                let round = ReconciliationRound(app: app, listed: orphans)
                if orphans.isEmpty { finish(round) }
                for orphan in orphans {
                    dispatcher.readChannel(orphan) { [self] read in
                        let storage = if case .success(let configuration) = read { configuration.storagePolicy } else { ChannelStorage?.none }
                        round.orphans.append(.init(apnsID: orphan, storage: storage))
                        round.outstanding -= 1
                        if round.outstanding == 0 { finish(round) }
                    }
                }
            }
        }
    }

    /// Every orphan of the round's app is read: adopt, delete the leftovers, create the rest
    /// again, and open the app's creates to callers.
    private func finish(_ round: ReconciliationRound) {
        let pending = channels.values.filter { $0.app == round.app && $0.lifecycle.awaitsReconciliation }
            .map { ChannelReconciliation.Pending(id: $0.id, storage: $0.storage, createdAt: $0.createdAt) }
        // Orphans in the order APNs listed them, whatever order their reads came back in.
        let order = Dictionary(uniqueKeysWithValues: round.listed.enumerated().map { ($1, $0) })
        let plan = ChannelReconciliation.plan(pending: pending, orphans: round.orphans.sorted { order[$0.apnsID, default: 0] < order[$1.apnsID, default: 0] })
        for (channelID, apnsID) in plan.adoptions {
            if let channel = channels[channelID] { lifecycle(.adopt(apnsID), of: channel) }
        }
        for orphan in plan.delete {
            // A gateway's own start: every channel is its own, with no lease to fence.
            dispatcher(ofApp: round.app).deleteChannel(orphan, fence: nil) { [self] result in
                if case .failure(let error) = result {
                    log.warning("deleting orphan APNs channel \(orphan) of app '\(round.app)' failed", apnsID: error.requestID, error: error)
                }
            }
        }
        for channelID in plan.recreate {
            if let channel = channels[channelID] { lifecycle(.recreate, of: channel) }
        }
        reconcilingApps.remove(round.app)
    }
}

/// The progress of one reconciliation, on the ingest loop (`@unchecked Sendable` so the APNs
/// replies, which run there, can capture it).
private final class ReconciliationRound: @unchecked Sendable {
    let app: String
    let listed: [String]
    var outstanding: Int
    var orphans: [ChannelReconciliation.Orphan] = []
    init(app: String, listed: [String]) {
        self.app = app
        self.listed = listed
        outstanding = listed.count
    }
}
