import APNs
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Creates whose answer was lost (the process died between asking APNs and saving the id).
///
/// Such a channel is still `creating` in the store, and Apple may hold a channel for it that no
/// record accounts for (an orphan). At start-up, before new creates are taken, the gateway lists
/// the app's channels and reads the storage policy of each orphan; each `creating` channel
/// adopts an orphan with its policy, or is created again if none is left, and orphans left over
/// are deleted at Apple. So no channel leaks toward Apple's limit (docs/storage.md). This
/// assumes the app's channels in this environment belong to this gateway alone.
extension ChannelService {
    func reconcileLostCreates() {
        guard channels.values.contains(where: { $0.apnsChannelID == nil }) else { return }
        isReconciling = true
        dispatcher.listChannels { [self] result in
            switch result {
            case .failure(let error):
                log.error("cannot list the APNs channels to reconcile lost creates", apnsID: error.requestID, error: error)
                isReconciling = false
            case .success(let listed):
                let accounted = Set(channels.values.compactMap(\.apnsChannelID))
                let orphans = listed.filter { !accounted.contains($0) }
                let round = ReconciliationRound(outstanding: orphans.count)
                if orphans.isEmpty { finish(round) }
                for orphan in orphans {
                    dispatcher.readChannel(orphan) { [self] read in
                        let adopted = if case .success(let configuration) = read { adopt(orphan, storage: configuration.storagePolicy) } else { false }
                        if !adopted { round.leftovers.append(orphan) }
                        round.outstanding -= 1
                        if round.outstanding == 0 { finish(round) }
                    }
                }
            }
        }
    }

    /// Gives `apnsID` to the oldest `creating` channel with that storage policy; false if none.
    private func adopt(_ apnsID: String, storage: ChannelStorage) -> Bool {
        let candidates = channels.values.filter { $0.apnsChannelID == nil && !$0.isAdopting && $0.storage == storage }
        guard let channel = candidates.min(by: { $0.createdAt < $1.createdAt }) else { return false }
        channel.isAdopting = true
        store.submit(WriteBatch([.channelCreated(channelID: channel.id, apnsChannelID: apnsID, at: clock.now())])) { [self] result in
            loop.execute { [self] in
                channel.isAdopting = false
                if case .failure(let error) = result {
                    // Kept, so the next create request saves this id instead of asking for another channel.
                    channel.unsavedAPNsChannelID = apnsID
                    return log.error("saving the adopted APNs channel \(apnsID) failed", channel: channel.id, error: error)
                }
                log.notice("adopted APNs channel \(apnsID) from a create whose answer was lost", channel: channel.id)
                markCreated(channel, apnsID: apnsID)
            }
        }
        return true
    }

    /// Deletes the orphans nobody adopted, creates the rest again and opens creates to callers.
    private func finish(_ round: ReconciliationRound) {
        for orphan in round.leftovers {
            dispatcher.deleteChannel(orphan) { [self] result in
                if case .failure(let error) = result {
                    log.warning("deleting orphan APNs channel \(orphan) failed", apnsID: error.requestID, error: error)
                }
            }
        }
        for channel in channels.values where channel.apnsChannelID == nil && !channel.isAdopting && !channel.createInFlight {
            callCreate(channel)
        }
        isReconciling = false
    }
}

/// The progress of one reconciliation, on the ingest loop (`@unchecked Sendable` so the APNs
/// replies, which run there, can capture it).
private final class ReconciliationRound: @unchecked Sendable {
    var outstanding: Int
    var leftovers: [String] = []
    init(outstanding: Int) { self.outstanding = outstanding }
}
