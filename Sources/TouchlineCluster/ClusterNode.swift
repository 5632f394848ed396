import Foundation
import NATS
import Synchronization
import TouchlineAccess
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore

/// One gateway's part in a cluster (the `jetstream` backend, docs/cluster.md): its NATS
/// connection, the channel store on the partition logs, the lease keeper that says which
/// partitions it owns, taking partitions up and letting them go, and the hand-over of provider
/// requests to the gateway that owns their channel.
///
/// Threads: the keeper, the partitions' states, forwarding and the owner's subscriptions are
/// confined to the ingest loop (they work hand in hand with ``ChannelService``); the channel
/// store has a loop of its own; reading a partition's log when it is taken up blocks, so it runs
/// on a thread of its own and hops back to the ingest loop with `execute`.
final class ClusterNode: ChannelOwnership, @unchecked Sendable {
    /// How long a forwarded request waits for the owner's answer (a create waits for APNs too).
    static let forwardTimeout: Duration = .seconds(10)
    /// How long a forwarded feed export may take, its reading at the owner included.
    static let exportTimeout: Duration = .seconds(60)
    /// How soon a partition whose log could not be read is tried again.
    static let catchUpRetry: Duration = .seconds(1)

    let settings: JetStreamSettings
    let connection: any MessagingClient
    let store: JetStreamChannelStore
    let jetStream: any JetStreamClient
    let storeLoop: EventLoop
    let partitioning: ChannelPartitioning
    private let keeper: PartitionLeaseKeeper
    /// The keeper's holds, read by the last checks before side effects leave (any thread).
    let fences: PartitionFences
    private let relay: OwnershipRelay
    /// How long others wait before taking a silent owner's partitions.
    private let leaseTTL: Duration
    /// Events published straight to the cluster, taken for the partitions served here.
    private let ingest: DirectIngest
    /// How full each stream and bucket is (`/metrics`).
    let storage: ClusterStorageGauge
    let ingestLoop: EventLoop
    private let log: GatewayLog
    private let connectionState: ConnectionState

    // Confined to the ingest loop.
    private(set) var requests: NATSRequests?
    private var partitions: [Int: PartitionState] = [:] {
        didSet {
            let served = Set(servedPartitions)
            publishedServed.withLock { if $0 != served { $0 = served } }
        }
    }
    /// The partitions served here, published for the webhook loop (``servedNow``): the one
    /// piece of the node's state read off the ingest loop, a copy under a lock, never waited on.
    private let publishedServed = Mutex<Set<Int>>([])
    private(set) var service: ChannelService?
    private(set) var router: APIRouter?
    private var left: [() -> Void] = []
    private var hasLeft = false
    /// Armed while a partition's log is to be read again after a failure (one per partition),
    /// and while leaving (a lease's time at most).
    private var retryTimers: [Int: LoopTimer] = [:]
    private var leaveTimer: LoopTimer?
    /// Listings asked by the other gateways (`ClusterNode+Listing.swift`).
    private var memberSubscription: (any MessageSubscription)?
    /// Shares of `GET /v1/events` asked by the other gateways (`ClusterNode+Events.swift`).
    private var eventsSubscription: (any MessageSubscription)?
    /// Reconciliation with APNs' list-all, while this gateway holds partition 0.
    private(set) var reconciler: ClusterReconciler?
    /// The partitioned token registry, when the cluster holds it so (set before ``start(service:router:)``):
    /// its partitions are taken up and let go with the channels' leases, each on its own
    /// (``registryQueue(of:)``), so a channel partition never waits for its tokens.
    var registryPartitions: PartitionedRegistry? {
        didSet {
            // A partition whose file fell behind its log is taken up again under the same fence
            // (told on the registry's loop; the take-ups are queued from the ingest loop).
            registryPartitions?.partitionFellBehind = { [weak self] partition, fence in
                self?.ingestLoop.execute { [weak self] in self?.takeUpRegistry(partition, fence: fence) }
            }
        }
    }
    /// One serial queue per registry partition: its take-ups and let-gos run there in the order
    /// the leases came, blocking only that queue.
    private var registryQueues: [Int: DispatchQueue] = [:]

    private enum PartitionState {
        /// Its log is being read; requests for it get 503 meanwhile.
        case restoring(Fence)
        /// Its channels run here; requests handed over for it, and events published for it
        /// straight to the cluster, are taken (the subscriptions).
        case serving(Fence, [any MessageSubscription])

        var fence: Fence {
            switch self {
            case .restoring(let fence), .serving(let fence, _): fence
            }
        }
    }

    /// Connects to the cluster, opens the channel store (creating the streams and the lease
    /// bucket if needed) and prepares the keeper; nothing is owned until ``start(service:router:)``.
    /// Blocking: call it while the gateway starts, never on a loop. Throws naming the servers
    /// and the client's reason when the cluster cannot be reached.
    static func connect(_ settings: JetStreamSettings, nats: NATSConnector, ingestLoop: EventLoop, clock: any WallClock,
                        log: GatewayLog) throws -> ClusterNode {
        let storeLoop = EventLoop.start(name: "touchline-store")
        let connectionState = ConnectionState()
        do {
            let jetStream = try nats(settings, storeLoop) { event in
                switch event {
                case .disconnected:
                    connectionState.isUp.store(false, ordering: .relaxed)
                    if !connectionState.isClosing.load(ordering: .relaxed) {
                        log.warning("lost the NATS server; reconnecting (requests for other gateways' channels answer 503 meanwhile)")
                    }
                case .reconnected(let server):
                    connectionState.isUp.store(true, ordering: .relaxed)
                    log.notice("reconnected to NATS server \(server)")
                case .error(let message):
                    log.warning("NATS: \(message)")
                case .closed:
                    break
                }
            }
            let connection = jetStream.messaging
            do {
                guard let partitioning = ChannelPartitioning(count: settings.partitions) else {
                    throw GatewayError.startup("store.partitions \(settings.partitions) is not a partition count")
                }
                try ClusterDescriptor.agree(partitions: settings.partitions, prefix: settings.prefix, replicas: settings.replicas,
                                            jetStream: jetStream, loop: storeLoop)
                let layout = ChannelLogLayout(prefix: settings.prefix, partitioning: partitioning)
                try refuseOtherReplicas(settings, layout: layout, jetStream: jetStream)
                let fences = PartitionFences(partitions: settings.partitions, instance: settings.instance)
                let store = try JetStreamChannelStore.open(jetStream: jetStream, layout: layout, replicas: settings.replicas, partitions: [],
                                                           limits: settings.limits.channelLogs,
                                                           snapshots: SnapshotSchedule.Settings(minimumLogBytes: settings.snapshotLogBytes),
                                                           fences: fences, loop: storeLoop, clock: clock)
                let ingest = DirectIngest(prefix: settings.prefix, jetStream: jetStream, connection: connection, loop: ingestLoop,
                                          log: log.named("ingest"))
                try ingest.ensureStreams(replicas: settings.replicas, ingestBytes: settings.limits.ingestBytes,
                                         rejectedBytes: settings.limits.rejectedBytes)
                try ClusterMappingCheck.run(prefix: settings.prefix, partitioning: partitioning, connection: connection, loop: storeLoop,
                                            log: log.named("cluster"))
                let relay = OwnershipRelay()
                let leases = try settings.leases.leaseSettings(partitions: settings.partitions)
                let keeper = try PartitionLeaseKeeper.make(jetStream: jetStream, bucket: PartitionLeaseKeeper.bucketName(prefix: settings.prefix), replicas: settings.replicas,
                                                           maximumBytes: settings.limits.leasesBytes,
                                                           instance: settings.instance, settings: leases, fences: fences,
                                                           loop: ingestLoop) { relay.handler?($0) }
                let storage = ClusterStorageGauge(jetStream: jetStream, streams: settings.limits.streams(layout: layout, ingest: ingest, registry: settings.registry),
                                                  loop: ingestLoop)
                return ClusterNode(settings: settings, connection: connection, jetStream: jetStream, store: store, storeLoop: storeLoop, partitioning: partitioning,
                                   keeper: keeper, fences: fences, relay: relay, leaseTTL: leases.leaseTTL, ingest: ingest, storage: storage,
                                   ingestLoop: ingestLoop, connectionState: connectionState, log: log)
            } catch {
                connection.close()
                throw error
            }
        } catch let error as NATSError {
            storeLoop.stopAndWait()
            throw GatewayError.startup("cannot use the NATS cluster (store.servers \(settings.servers.joined(separator: ", "))): \(error)")
        } catch {
            storeLoop.stopAndWait()
            throw error
        }
    }

    /// Refuses a replica count other than the one the cluster's streams were made with: creating
    /// them again with it would move every stream's copies (and a lower count would lose the
    /// quorum the others count on) behind the other gateways' backs.
    private static func refuseOtherReplicas(_ settings: JetStreamSettings, layout: ChannelLogLayout, jetStream: any JetStreamClient) throws {
        let stream = layout.streamName(of: .partition(0))
        guard let state = try JetStream.retryingWhileForming({ () throws(NATSError) in try jetStream.streamState(stream) }),
              state.replicas != settings.replicas else { return }
        throw GatewayError.startup("the cluster's streams were made with \(state.replicas) replicas (\(stream)), but store.replicas is \(settings.replicas): give every gateway the same count")
    }

    private init(settings: JetStreamSettings, connection: any MessagingClient, jetStream: any JetStreamClient, store: JetStreamChannelStore, storeLoop: EventLoop,
                 partitioning: ChannelPartitioning, keeper: PartitionLeaseKeeper, fences: PartitionFences, relay: OwnershipRelay, leaseTTL: Duration, ingest: DirectIngest,
                 storage: ClusterStorageGauge, ingestLoop: EventLoop, connectionState: ConnectionState, log: GatewayLog) {
        self.ingest = ingest
        self.storage = storage
        self.leaseTTL = leaseTTL
        self.settings = settings
        self.connection = connection
        self.jetStream = jetStream
        self.store = store
        self.storeLoop = storeLoop
        self.partitioning = partitioning
        self.keeper = keeper
        self.fences = fences
        self.relay = relay
        self.ingestLoop = ingestLoop
        self.connectionState = connectionState
        self.log = log
    }

    /// Whether the NATS connection is up, as its events (on the store's loop) report it.
    private final class ConnectionState: Sendable {
        let isUp = Atomic<Bool>(true)
        /// Set by ``close()``: the disconnection that follows is no news.
        let isClosing = Atomic<Bool>(false)
    }

    /// The keeper's ownership changes, handed on to the node once it has started (the keeper
    /// reports nothing before). Confined to the ingest loop.
    private final class OwnershipRelay: @unchecked Sendable {
        var handler: ((PartitionLeaseKeeper.Ownership) -> Void)?
    }

    // MARK: Running

    /// Starts taking part (on the ingest loop): the keeper joins, and partitions are taken up as
    /// their leases are granted.
    func start(service: ChannelService, router: APIRouter) throws {
        self.service = service
        self.router = router
        requests = try NATSRequests(connection: connection, loop: ingestLoop)
        relay.handler = { [weak self] change in self?.ownershipChanged(change) }
        let ingestLoop = ingestLoop
        store.onStalePartition { [weak self] partition in ingestLoop.execute { [weak self] in self?.readAgain(partition) } }
        memberSubscription = try connection.subscribe(to: memberSubject(settings.instance), loop: ingestLoop) {
            [weak self] message in self?.serveListing(message)
        }
        eventsSubscription = try connection.subscribe(to: eventsSubject(settings.instance), loop: ingestLoop) {
            [weak self] message in self?.serveEvents(message)
        }
        let reconciler = ClusterReconciler(node: self, service: service, log: log)
        try reconciler.start()
        self.reconciler = reconciler
        storage.start()
        try keeper.start()
    }

    /// Whether this gateway acts for `channelID` now: its partition is taken up here and its
    /// lease still valid at this instant. Asked before every push.
    func actsFor(_ channelID: String) -> Bool {
        serves(partitioning.partition(of: channelID))
    }

    /// The fence of `channelID`'s partition while this gateway serves it (its lease valid at this instant).
    func fence(for channelID: String) -> Fence? {
        let partition = partitioning.partition(of: channelID)
        guard case .serving? = partitions[partition] else { return nil }
        return keeper.fence(for: partition)
    }

    /// The last check a side effect of `channelID` decided under `fence` carries: it leaves only
    /// while this gateway still holds that fence of the channel's partition.
    func sideEffectFence(for channelID: String, fence: Fence) -> (any SideEffectFence)? {
        fences.fence(of: partitioning.partition(of: channelID), fence)
    }

    /// Whether the partition is taken up here and its lease valid at this instant.
    func serves(_ partition: Int) -> Bool {
        guard case .serving? = partitions[partition] else { return false }
        return keeper.fence(for: partition) != nil
    }

    /// True while the NATS connection is up (readiness; ingest answers 503 otherwise).
    var isConnected: Bool { connectionState.isUp.load(ordering: .relaxed) }

    /// None of the keeper's writes stored for longer than a lease (its leases, and likely every
    /// gateway's, have lapsed: the cluster has lost its quorum, or this gateway its way to it).
    var leaseWritesFailing: (seconds: Int64, reason: String)? {
        guard let stalled = keeper.writesStalled(longerThan: leaseTTL) else { return nil }
        return ((ContinuousClock.now - stalled.since).components.seconds, stalled.reason)
    }

    /// The members the keeper counts as live, this gateway included.
    var liveMembers: [InstanceID] { keeper.liveMembers }

    /// Requests handed to other gateways, by outcome (`/metrics`).
    private(set) var forwarded: [String: Int] = [:]

    /// The partitions served here as last published, from any thread: the webhook delivery
    /// delivers the events of these partitions (``ServedOutboxReader``).
    var servedNow: Set<Int> { publishedServed.withLock { $0 } }

    /// The partitions served here, for `/readyz` and `/metrics`.
    var servedPartitions: [Int] {
        partitions.compactMap { if case .serving = $1 { $0 } else { nil } }.sorted()
    }

    /// Told the partitions whose leases this gateway holds, each with its fence, on the ingest
    /// loop, each time they change (the cluster's personal jobs run the slices of those
    /// partitions under those fences: ``SharedJobs``).
    var partitionsChanged: (([Int: Fence]) -> Void)?

    private func ownershipChanged(_ change: PartitionLeaseKeeper.Ownership) {
        defer { partitionsChanged?(partitions.mapValues(\.fence)) }
        switch change {
        case .start(let partition, let fence):
            takeUpRegistry(partition, fence: fence)
            partitions[partition] = .restoring(fence)
            // Requests handed to the former owner wait for a gateway that lost the partition (a
            // stopped process keeps its subscription): they are answered now, not after the
            // forward's timeout, and their retries are served here once the log is read.
            requests?.abandon(subject: ownerSubject(partition))
            catchUp(partition, fence: fence)
        case .stop(let partition):
            let state = partitions.removeValue(forKey: partition)
            if case .serving(_, let subscriptions)? = state {
                subscriptions.forEach { $0.cancel() }
                service?.letGo { partitioning.partition(of: $0) == partition }
                log.notice("let go of partition \(partition)")
            }
            // Behind the writes its channels submitted already (from this loop): the partition's
            // tables go once those are done.
            store.release(partition: partition)
            letGoOfRegistry(partition)
        case .left:
            hasLeft = true
            left.forEach { $0() }
            left = []
        }
    }

    /// A served partition whose log moved on unseen (a write refused by the log, or one that got
    /// no answer): its channels are let go, its log read again and its channels taken up from
    /// it, if the lease still holds (if it does not, the keeper's stop follows).
    private func readAgain(_ partition: Int) {
        guard case .serving(let fence, let subscriptions)? = partitions[partition] else { return }
        log.warning("partition \(partition)'s log moved on unseen (a write refused, or without an answer): reading it again")
        subscriptions.forEach { $0.cancel() }
        service?.letGo { partitioning.partition(of: $0) == partition }
        partitions[partition] = .restoring(fence)
        catchUp(partition, fence: fence)
    }

    /// Reads the partition's log up to its end (another gateway may have written it) and writes
    /// the takeover record after it, then takes its channels up, if the lease that asked for it
    /// still holds.
    /// Its recordings are read here too (their sizes count against the recording quotas), so
    /// the ingest loop never waits for them.
    private func catchUp(_ partition: Int, fence: Fence) {
        let store = store, ingestLoop = ingestLoop, ingest = ingest, partitioning = partitioning
        let recordings = ClusterFeedRecordings(store: store)
        Thread { [weak self] in
            let outcome = Result(catching: { () throws -> [String: RecordingSize] in
                try store.takeOver(partition: partition, under: fence)
                try ingest.prepare(partition: partition)
                let reader = store.openReader()
                defer { reader.close() }
                return try recordings.sizes(of: reader) { partitioning.partition(of: $0) == partition }
            })
            ingestLoop.execute { [weak self] in self?.caughtUp(partition, fence: fence, outcome: outcome) }
        }.start()
    }

    private func caughtUp(_ partition: Int, fence: Fence, outcome: Result<[String: RecordingSize], any Error>) {
        guard case .restoring(let asked)? = partitions[partition], asked == fence else { return }
        let recordingSizes: [String: RecordingSize]
        switch outcome {
        case .success(let sizes): recordingSizes = sizes
        case .failure(let failure):
            log.error("reading partition \(partition)'s log failed; trying again", error: failure)
            return retryCatchUp(partition, fence: fence)
        }
        do {
            guard let service else { return }
            let handedOver = try connection.subscribe(to: ownerSubject(partition), queue: "owners", loop: ingestLoop) {
                [weak self] message in self?.serve(message, partition: partition)
            }
            let published = try ingest.subscribe(partition: partition, service: service) { [weak self] partition in
                self?.serves(partition) ?? false
            }
            // Served from now on: the channels taken up below push what they had pending at once.
            partitions[partition] = .serving(fence, [handedOver, published])
            let reader = store.openReader()
            defer { reader.close() }
            try service.takeUp(from: reader, recordingSizes: recordingSizes) { partitioning.partition(of: $0) == partition }
            log.notice("took up partition \(partition) (\(fence))")
        } catch {
            log.error("taking up partition \(partition) failed; trying again", error: error)
            if case .serving(_, let subscriptions)? = partitions[partition] { subscriptions.forEach { $0.cancel() } }
            service?.letGo { partitioning.partition(of: $0) == partition }
            partitions[partition] = .restoring(fence)
            retryCatchUp(partition, fence: fence)
        }
    }

    /// Takes `partition` of the partitioned registry up under `fence` (its log read, its
    /// takeover record written), on its queue; a failure is tried again a second later while
    /// the fence holds and the registry is open.
    private func takeUpRegistry(_ partition: Int, fence: Fence) {
        guard let registry = registryPartitions else { return }
        let queue = registryQueue(of: partition), fences = fences, log = log
        queue.async { Self.takeUp(partition, under: fence, registry: registry, fences: fences, queue: queue, log: log) }
    }

    /// One attempt at a take-up, on the partition's queue. The next attempt is queued there a
    /// second after a failure, not slept for: a let-go queued meanwhile runs first, and the
    /// attempt after it finds the fence moved.
    private static func takeUp(_ partition: Int, under fence: Fence, registry: PartitionedRegistry, fences: PartitionFences,
                               queue: DispatchQueue, log: GatewayLog) {
        guard fences.holds(fence, of: partition) else { return }
        do {
            let kept = try registry.takeUp(partition, under: fence)
            log.notice("took up registry partition \(partition) (\(fence))" + (kept > 0 ? ", its kept file read on from log sequence \(kept)" : ""))
        } catch StoreError.closed {
            return  // the gateway stops
        } catch {
            log.error("taking up registry partition \(partition) failed; trying again", error: error)
            queue.asyncAfter(deadline: .now() + 1) { takeUp(partition, under: fence, registry: registry, fences: fences, queue: queue, log: log) }
        }
    }

    /// Lets go of `partition` of the partitioned registry (its file dropped), after its take-up;
    /// no reader is handed its file from now on.
    private func letGoOfRegistry(_ partition: Int) {
        guard let registry = registryPartitions else { return }
        registry.withdraw(partition)
        registryQueue(of: partition).async { registry.letGo(partition) }
    }

    private func registryQueue(of partition: Int) -> DispatchQueue {
        if let queue = registryQueues[partition] { return queue }
        let queue = DispatchQueue(label: "touchline-registry-\(partition)")
        registryQueues[partition] = queue
        return queue
    }

    /// Reads the partition's log again a little later, if the lease that asked for it still holds.
    private func retryCatchUp(_ partition: Int, fence: Fence) {
        let timer = retryTimers[partition] ?? LoopTimer(loop: ingestLoop) { [weak self] in
            guard let self, case .restoring(let now)? = partitions[partition] else { return }
            catchUp(partition, fence: now)
        }
        retryTimers[partition] = timer
        timer.schedule(after: Self.catchUpRetry)
    }

    // MARK: Requests

    /// Where a provider request is served: here when its channel's partition is served here
    /// (or it concerns no channel), else at the partition's owner, whose answer is relayed.
    /// Unauthorized requests are refused here, never sent on.
    func route(_ request: HTTPRequest) {
        guard let router else { return }
        let resolved = router.resolve(method: request.method, path: request.path)
        // A channels collection of any app: listed everywhere; a create goes to the new channel's owner.
        let pattern: String? = if case .found(let route, _) = resolved { route.pattern } else { nil }
        let isChannelsCollection = APIAccess.appRouteBases.contains { pattern == "\($0)/channels" }
        if request.method == .get, isChannelsCollection { return listEverywhere(request) }
        if request.method == .get, request.path == "/v1/events" { return listEventsEverywhere(request) }
        if request.method == .get, request.path == "/v1/deadletters" { return listDeadLettersEverywhere(request) }
        if request.method == .post, request.path == "/v1/deadletters/replay", let gateway = replayGateway(of: request) {
            return replayThrough(gateway, request)
        }
        guard case .found(let route, let parameters) = resolved,
              let channelID = channelID(of: request, scope: route.scope, parameters: parameters, isCreate: isChannelsCollection) else {
            return router.handle(request)
        }
        let partition = partitioning.partition(of: channelID)
        if serves(partition) { return router.handle(request) }
        do throws(HTTPError) {
            _ = try router.authorize(request, for: route, parameters: parameters)
            if case .restoring? = partitions[partition] {
                // Its lease is this gateway's: nobody else serves it, and a stopped former owner
                // would never answer.
                throw HTTPError.channelMoving("this gateway is taking partition \(partition) over (reading its log) for channel '\(channelID)'; retry")
            }
            guard isConnected else {
                throw HTTPError(status: 503, code: "cluster_unavailable", message: "this gateway has lost its NATS cluster; retry shortly",
                                headers: [("Retry-After", "1")])
            }
            if let failing = leaseWritesFailing {
                throw HTTPError(status: 503, code: "cluster_unavailable",
                                message: "the NATS cluster has not stored this gateway's lease writes for \(failing.seconds) s (\(failing.reason)): without a quorum of its servers no gateway serves channels; retry shortly",
                                headers: [("Retry-After", "1")])
            }
        } catch {
            request.respond(error.response)
            return
        }
        forward(request, channelID: channelID, partition: partition)
    }

    /// The kept id (``AppChannelID``) of the channel a request concerns, whose partition owns
    /// it: the path's for channel routes, the body's `id` for a create (`isCreate`: a POST to a
    /// channels collection), in the path's app.
    private func channelID(of request: HTTPRequest, scope: APIScope, parameters: HTTPRouteParameters, isCreate: Bool) -> String? {
        let app = parameters["app"] ?? AppChannelID.defaultApp
        if case .channel(let parameter) = scope { return parameters[parameter].map { AppChannelID.qualified($0, app: app) } }
        guard request.method == .post, isCreate, case .string(let id)? = (try? JSONParser.parse(request.body))?[member: "id"] else { return nil }
        return AppChannelID.qualified(id, app: app)
    }

    private func forward(_ request: HTTPRequest, channelID: String, partition: Int) {
        guard let requests else { return }
        // An export reads a whole recording at the owner (up to 100,000 events) before it answers.
        let timeout = request.method == .get && request.path.hasSuffix("/events/export") ? Self.exportTimeout : Self.forwardTimeout
        requests.request(ForwardedRequest(of: request).encoded, to: ownerSubject(partition), timeout: timeout,
                         parts: { ForwardedResponse.partCount(ofFirst: $0.payload) }) { [self] result in
            let (outcome, response) = Self.relayed(result, channelID: channelID, partition: partition)
            forwarded[outcome, default: 0] += 1
            request.respond(response)
        }
    }

    /// What the provider gets for a forwarded request's result, and the outcome's name for `/metrics`.
    private static func relayed(_ result: Result<[NATSMessage], NATSRequests.Failure>, channelID: String,
                                partition: Int) -> (outcome: String, response: HTTPResponse) {
        switch result {
        case .success(let messages):
            do {
                return ("answered", try ForwardedResponse(decodingParts: messages.map(\.payload)).response)
            } catch {
                return ("unreadable", HTTPError(status: 502, code: "owner_answer_unreadable",
                                                message: "the gateway owning channel '\(channelID)' answered with unreadable bytes: \(error)").response)
            }
        case .failure(.noResponders):
            return ("no_owner", HTTPError.channelMoving("no gateway serves channel '\(channelID)' right now (partition \(partition) is moving); retry").response)
        case .failure(.timedOut(_, let after)):
            return ("timeout", HTTPError(status: 503, code: "owner_timeout",
                                         message: "the gateway owning channel '\(channelID)' did not answer within \(after); it may have acted on the request: retry it (events are idempotent by seq, creates by id)",
                                         headers: [("Retry-After", "1")]).response)
        case .failure(.abandoned):
            return ("abandoned", HTTPError.channelMoved("partition \(partition) of channel '\(channelID)' moved to this gateway while the request waited for its former owner, "
                                                        + "which may have acted on it: retry it (events are idempotent by seq, creates by id)").response)
        case .failure(.notSent(let error)):
            return ("not_sent", HTTPError(status: 503, code: "cluster_unavailable", message: "the request could not be handed to its channel's gateway: \(error)",
                                          headers: [("Retry-After", "1")]).response)
        }
    }

    /// A request handed over by another gateway, for a partition served here.
    private func serve(_ message: NATSMessage, partition: Int) {
        guard let reply = message.reply, let router else { return }
        let connection = connection
        let answer: (HTTPResponse) -> Void = { response in
            for part in ForwardedResponse(response).parts(maximumSize: connection.maximumPayload) { try? connection.publish(part, to: reply) }
        }
        guard serves(partition) else {
            return answer(HTTPError.channelMoving("partition \(partition) is moving to another gateway; retry").response)
        }
        do {
            router.handle(try ForwardedRequest(decoding: message.payload).request(on: ingestLoop, answer: answer))
        } catch {
            answer(HTTPError(status: 400, code: "forwarded_request_unreadable", message: "a gateway handed over unreadable bytes: \(error)").response)
        }
    }

    private func ownerSubject(_ partition: Int) -> String { "\(settings.prefix).owner.\(partition)" }

    // MARK: Leaving

    /// Gives every partition up (the others take them over at once) and calls `done` on the
    /// ingest loop when the keeper has left, or after a lease's time at most.
    func leave(done: @escaping () -> Void) {
        guard !hasLeft else { return done() }
        reconciler?.stop()
        storage.stop()
        var called = false
        let once = { if !called { called = true; done() } }
        left.append(once)
        let timer = LoopTimer(loop: ingestLoop) { once() }
        leaveTimer = timer
        timer.schedule(after: leaseTTL)
        keeper.shutdown()
    }

    /// Closes the store (waiting for its queued writes), the connection and the store's loop.
    /// Blocking: call it off the loops.
    func close() {
        store.close()
        connectionState.isClosing.store(true, ordering: .relaxed)
        connection.close()
        storeLoop.stopAndWait()
    }
}

extension Result where Success == Void {
    /// The error, if any.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
