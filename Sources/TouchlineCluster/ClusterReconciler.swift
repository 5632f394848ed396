import Foundation
import NATS
import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// Reconciliation with APNs' list-all on a cluster: the gateway holding partition 0's lease
/// (the lease is the election: one holder at a time, taken over when it dies) lists the app's
/// channels at Apple every `reconcileInterval`, gathers the APNs ids of every gateway's
/// channels, and deletes at Apple the channels no gateway accounts for in two rounds an interval
/// apart (``OrphanSweep``): the orphans of creates whose answer was lost, which the partition's
/// next owner created again. A round whose accounts miss a partition (moving, or a gateway that
/// did not answer) decides nothing. docs/cluster.md, "Reconciliation with APNs' list-all".
///
/// Confined to the ingest loop, like the node and the channel service it reads;
/// `@unchecked Sendable` only so the loop's callbacks can capture it.
final class ClusterReconciler: @unchecked Sendable {
    /// How long the others' accounts are waited for.
    static let accountsTimeout: Duration = .seconds(5)

    private unowned let node: ClusterNode
    private let service: ChannelService
    private let log: GatewayLog
    /// Each app's sweep: an app's channels are its own at APNs, listed with its own connections.
    private var sweeps: [String: OrphanSweep] = [:]
    private var timer: LoopTimer?
    private var subscription: (any MessageSubscription)?
    private var roundInProgress = false
    /// Rounds by outcome (`complete`, `incomplete`, `list_failed`) and orphans deleted: `/metrics`.
    private(set) var rounds: [String: Int] = [:]
    private(set) var orphansDeleted = 0

    init(node: ClusterNode, service: ChannelService, log: GatewayLog) {
        self.node = node
        self.service = service
        self.log = log
        for app in service.servedApps { sweeps[app] = OrphanSweep(confirmationAge: node.settings.reconcileInterval) }
    }

    /// Answers the others' requests for this gateway's accounts, and starts the rounds' timer.
    func start() throws {
        subscription = try node.connection.subscribe(to: accountsSubject(node.settings.instance), loop: node.ingestLoop) {
            [weak self] message in self?.answerAccounts(message)
        }
        let timer = LoopTimer(loop: node.ingestLoop) { [weak self] in self?.tick() }
        self.timer = timer
        timer.schedule(after: node.settings.reconcileInterval)
    }

    func stop() {
        timer?.cancel()
        subscription?.cancel()
    }

    private func accountsSubject(_ instance: InstanceID) -> String { node.memberSubject(instance) + ".accounts" }

    /// This gateway's accounts: the partitions whose channels it runs, and those channels' APNs ids.
    private var ownAccounts: Accounts {
        Accounts(partitions: Set(node.servedPartitions), apnsIDs: Set(service.channels.values.compactMap(\.apnsChannelID)))
    }

    private func answerAccounts(_ message: NATSMessage) {
        guard let reply = message.reply else { return }
        try? node.connection.publish(ownAccounts.encoded, to: reply)
    }

    private func tick() {
        timer?.schedule(after: node.settings.reconcileInterval)
        guard node.serves(0), node.isConnected, !roundInProgress else { return }
        roundInProgress = true
        // Apple's lists first (every app's): a channel created after them is not in them, so
        // accounts gathered later can only account for more, never less, of what they hold.
        listEveryApp(service.servedApps.sorted(), listed: [:])
    }

    /// Lists `apps` one after another, then gathers the accounts; a list that fails ends the round.
    private func listEveryApp(_ apps: [String], listed: [String: [String]]) {
        guard let app = apps.first else {
            return gatherAccounts { [weak self] accounts in self?.decide(listed: listed, accounts: accounts) }
        }
        service.dispatcher(ofApp: app).listChannels { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                log.warning("cannot list the APNs channels of app '\(app)' to find orphans; trying at the next round", apnsID: error.requestID, error: error)
                finish("list_failed")
            case .success(let channels):
                var listed = listed
                listed[app] = channels
                listEveryApp(Array(apps.dropFirst()), listed: listed)
            }
        }
    }

    /// Every live gateway's accounts (this one's read here), or nil if one did not answer.
    private func gatherAccounts(_ done: @escaping (Accounts?) -> Void) {
        let others = node.liveMembers.filter { $0 != node.settings.instance }
        guard !others.isEmpty else { return done(ownAccounts) }
        guard let requests = node.requests else { return done(nil) }
        let gathering = Gathering(own: ownAccounts, waiting: others.count, done: done)
        for member in others {
            requests.request([], to: accountsSubject(member), timeout: Self.accountsTimeout) { result in
                if case .success(let message) = result, let accounts = Accounts(decoding: message.payload) {
                    gathering.gathered?.add(accounts)
                } else {
                    gathering.gathered = nil
                }
                gathering.waiting -= 1
                if gathering.waiting == 0 { gathering.done(gathering.gathered) }
            }
        }
    }

    /// The accounts of one round while the others answer; on the ingest loop only.
    private final class Gathering: @unchecked Sendable {
        var gathered: Accounts?
        var waiting: Int
        let done: (Accounts?) -> Void

        init(own: Accounts, waiting: Int, done: @escaping (Accounts?) -> Void) {
            gathered = own
            self.waiting = waiting
            self.done = done
        }
    }

    private func decide(listed: [String: [String]], accounts: Accounts?) {
        guard let accounts, accounts.partitions.count == node.partitioning.count, node.serves(0) else {
            // A partition nobody runs at this moment would make its channels look like orphans.
            return finish("incomplete")
        }
        // Decided under partition 0's lease: the deletes leave only while it holds.
        let fence = node.fences.current(of: 0).map { node.fences.fence(of: 0, $0) }
        for (app, channels) in listed.sorted(by: { $0.key < $1.key }) {
            // Accounted ids are every app's: Apple's ids are its own, so another app's never match.
            let orphans = sweeps[app, default: OrphanSweep(confirmationAge: node.settings.reconcileInterval)]
                .round(listed: channels, accounted: accounts.apnsIDs, at: service.clock.now())
            for orphan in orphans {
                log.notice("deleting APNs channel \(orphan) of app '\(app)': no gateway has accounted for it for \(node.settings.reconcileInterval) (a create whose answer was lost)")
                service.dispatcher(ofApp: app).deleteChannel(orphan, fence: fence) { [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .success: orphansDeleted += 1
                    case .failure(let error): log.warning("deleting orphan APNs channel \(orphan) failed", apnsID: error.requestID, error: error)
                    }
                }
            }
        }
        finish("complete")
    }

    private func finish(_ outcome: String) {
        rounds[outcome, default: 0] += 1
        roundInProgress = false
    }

    /// What one gateway runs: its partitions and their channels' APNs ids. Sent as JSON.
    struct Accounts: Equatable {
        var partitions: Set<Int>
        var apnsIDs: Set<String>

        mutating func add(_ other: Accounts) {
            partitions.formUnion(other.partitions)
            apnsIDs.formUnion(other.apnsIDs)
        }

        var encoded: [UInt8] {
            JSONValue.object([
                .init("partitions", .array(partitions.sorted().map { .integer(Int64($0)) })),
                .init("apnsIds", .array(apnsIDs.sorted().map(JSONValue.string))),
            ]).encoded
        }

        init(partitions: Set<Int>, apnsIDs: Set<String>) {
            self.partitions = partitions
            self.apnsIDs = apnsIDs
        }

        init?(decoding bytes: [UInt8]) {
            guard let value = try? JSONParser.parse(bytes), case .array(let partitions)? = value[member: "partitions"],
                  case .array(let ids)? = value[member: "apnsIds"] else { return nil }
            var parsedPartitions: Set<Int> = [], parsedIDs: Set<String> = []
            for item in partitions {
                guard case .integer(let partition) = item else { return nil }
                parsedPartitions.insert(Int(partition))
            }
            for item in ids {
                guard case .string(let id) = item else { return nil }
                parsedIDs.insert(id)
            }
            self.init(partitions: parsedPartitions, apnsIDs: parsedIDs)
        }
    }
}
