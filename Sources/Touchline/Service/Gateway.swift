import APNs
import APNsMock
import Foundation
import Synchronization
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore

/// The Touchline gateway: the provider API in, APNs broadcasts out, SQLite underneath.
///
/// Threads: the ingest loop owns the HTTP server, the router and every channel (engine,
/// content-state, last `seq`); the store writer commits on its own thread and its completions
/// hop back to the ingest loop with `execute`; the broadcast loop owns the APNs connection pools
/// (push and management), reached and answered through ``BroadcastDispatcher``; the personal loop
/// owns a pool of its own and runs personal fan-out jobs (``PersonalDispatcher``).
///
/// `run(until:)` is the whole life in one call; `start()` and `shutdown()` are its two halves
/// (for tests and embedding): make them from one task, not concurrently.
public final class Gateway: Sendable {
    public let configuration: GatewayConfiguration
    private let clock: any WallClock
    private let log: GatewayLog
    private let running = Mutex<Running?>(nil)
    private let backends: Backends
    /// Where a key reload reads the configuration again (the serve command's sources).
    private let configurationSource: APNsKeyReload.ConfigurationSource?

    private struct Running: Sendable {
        var ingestLoop: EventLoop
        var broadcastLoop: EventLoop
        var personalLoop: EventLoop
        var webhookLoop: EventLoop
        var webhooks: WebhookDelivery
        var personal: PersonalDispatcher
        /// The other apps' personal queues (`apps`), on the personal loop too.
        var appPersonal: [PersonalDispatcher]
        var store: any ChannelStoreWriter
        var personalStore: any PersonalStoreWriter
        var connections: any BroadcastAPNsDispatch
        /// The other apps' broadcast and management dispatches (`apps`).
        var appConnections: [any BroadcastAPNsDispatch]
        var service: ChannelService
        /// The registry's read connection of the ingest loop's features, closed there at shutdown.
        var tokenReader: UncheckedTokenReader
        var router: APIRouter
        var server: UncheckedServer
        var mock: MockAPNsServer?
        /// This gateway's part in a cluster (the `jetstream` store backend), nil on its own.
        var cluster: ClusterNode?
        /// Rotates each app's APNs key, by app (empty in development mode: the bundled mock's key).
        var keyReloads: [String: APNsKeyReload]
        var port: Int

        /// Ends every grace under way at once (see ``ShutdownRequests``).
        func cutShort() {
            ingestLoop.execute { [server] in server.server.cutShutdownShort() }
            connections.cutShutdownShort()
            appConnections.forEach { $0.cutShutdownShort() }
            personal.cutShutdownShort()
            appPersonal.forEach { $0.cutShutdownShort() }
            webhooks.cutStopShort()
        }
    }

    /// The routes the running gateway serves, with who may call each (empty once shut down):
    /// the API document is checked against this table.
    var routes: [APIRouter.Route] {
        running.withLock { $0?.router.routes ?? [] }
    }

    /// The time slice the broadcast path's threads ask for: far below the default (1.4 ms on two
    /// CPUs), so that a goal's commit and push are not held behind the personal queue's work.
    static let broadcastPathSlice = Duration.microseconds(100)

    /// The HTTP server, used on the ingest loop only.
    private struct UncheckedServer: @unchecked Sendable { let server: HTTPServer }

    /// `log` defaults to standard output at the configured level, as component `gateway`.
    /// `configurationSource` reads the configuration again for a key reload
    /// (``reloadAPNsKey()``); without it a reload is refused.
    public convenience init(configuration: GatewayConfiguration, clock: any WallClock = SystemClock(), log: GatewayLog? = nil,
                            configurationSource: (@Sendable () throws -> GatewayConfiguration)? = nil) {
        self.init(configuration: configuration, clock: clock, log: log, backends: .standard, configurationSource: configurationSource)
    }

    /// A gateway on other stores and APNs dispatches (tests: the in-memory ones).
    package init(configuration: GatewayConfiguration, clock: any WallClock = SystemClock(), log: GatewayLog? = nil, backends: Backends,
                 configurationSource: (@Sendable () throws -> GatewayConfiguration)? = nil) {
        self.configuration = configuration
        self.clock = clock
        self.log = log ?? GatewayLog(component: "gateway", level: configuration.logLevel)
        self.backends = backends
        self.configurationSource = configurationSource
    }

    /// Reads the configuration again and, for each app, signs with the APNs key it names from
    /// now on, if that key is another one and usable (`SIGHUP`; docs/operations.md, "Rotating
    /// the APNs key"); otherwise that app's current key stays. Logs each app's outcome and
    /// returns whether a new key is in use for any app.
    @discardableResult
    public func reloadAPNsKey() -> Bool {
        let reloads = running.withLock { $0?.keyReloads ?? [:] }
        guard !reloads.isEmpty else {
            log.warning("no APNs key to reload: the gateway is not running, or sends to the bundled mock APNs with its own key")
            return false
        }
        var changed = false
        for (app, reload) in reloads.sorted(by: { $0.key < $1.key }) {
            do throws(APNsKeyReload.Refused) {
                let reloaded = try reload.reload()
                if reloaded.changed {
                    log.notice("app '\(app)': APNs key \(reloaded.keyID) of team \(reloaded.teamID) signs the provider tokens from now on")
                } else {
                    log.notice("app '\(app)': the configuration names the APNs key in use (\(reloaded.keyID)); nothing changed")
                }
                changed = changed || reloaded.changed
            } catch {
                log.error("app '\(app)': the APNs key was not reloaded (\(error.description)); the current key stays")
            }
        }
        return changed
    }

    /// A gateway released while it runs (never shut down: a test that failed half-way, say) stops
    /// its loops before its parts are taken apart, so that none of them runs on its loop while it
    /// is freed. Nothing is saved on the way: ``shutdown(requestGracePeriod:apnsGracePeriod:)`` is
    /// the way to stop.
    deinit {
        guard let current = running.withLock({ $0 }) else { return }
        for loop in [current.ingestLoop, current.broadcastLoop, current.personalLoop, current.webhookLoop] where !loop.inEventLoop {
            loop.stopAndWait()
        }
        current.cluster?.close()
        current.mock?.stop()
    }

    /// The mock APNs started in-process because `configuration.apns` is nil (nil otherwise).
    public var bundledMockAPNs: MockAPNsServer? { running.withLock { $0?.mock } }

    /// The port the provider API listens on, once started.
    public var port: Int? { running.withLock { $0?.port } }

    /// Opens the store, resumes the stored channels, connects to APNs (starting the bundled mock
    /// when no credentials are configured) and starts serving. Returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        if let port = running.withLock({ $0?.port }) { return port }
        ProcessSetup.prepare(log: log)
        let directory = configuration.dataDirectory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw GatewayError.dataDirectory(path: directory, cause: error.localizedDescription)
        }
        var mock: MockAPNsServer?
        let settings: GatewayConfiguration.APNsSettings
        switch (configuration.apnsMode, configuration.apns) {
        case (.apple, let configured?):
            settings = configured
        case (.apple, nil):
            throw GatewayError.startup(GatewayConfiguration.missingCredentials)
        case (.mock, nil):
            (mock, settings) = try BundledMockAPNs.start(dataDirectory: directory)
        case (.mock, _?):
            throw GatewayError.startup("APNs credentials are set but development mode sends to the bundled mock APNs: remove one of them")
        }
        do {
            let started = try start(settings: settings, mock: mock)
            running.withLock { $0 = started }
            return started.port
        } catch {
            mock?.stop()
            throw error
        }
    }

    private func start(settings: GatewayConfiguration.APNsSettings, mock: MockAPNsServer?) throws -> Running {
        // The stores and APNs through their protocols: SQLite and APNs connections by default (`Backends`).
        let connectAPNs = try backends.apns(APNsContext(configuration: configuration, settings: settings, clock: clock, log: log))
        let broadcastLoop = EventLoop.start(name: "touchline-broadcast")
        let ingestLoop = EventLoop.start(name: "touchline-ingest")
        let personalLoop = EventLoop.start(name: "touchline-personal")
        // Webhook delivery waits on receivers, never on the broadcast path: a loop of its own.
        let webhookLoop = EventLoop.start(name: "touchline-webhooks")
        let loops = [broadcastLoop, ingestLoop, personalLoop, webhookLoop]
        // A cluster gateway's channel store is the cluster's (its keeper runs on the ingest loop).
        let cluster: ClusterNode?
        let stores: Stores
        let reader: any ChannelStoreReader
        do {
            cluster = try configuration.store.jetStream.map { try ClusterNode.connect($0, nats: backends.nats, ingestLoop: ingestLoop, clock: clock, log: log.named("cluster")) }
            do {
                stores = try cluster.map { try Self.clusterStores($0, configuration) } ?? backends.stores(configuration)
            } catch {
                cluster?.close()
                throw error
            }
            do { reader = try stores.channelReader() } catch {
                stores.close()
                cluster?.close()
                throw error
            }
        } catch {
            loops.forEach { $0.stopAndWait() }
            throw error
        }
        let (store, personalStore) = (stores.channels, stores.personal)
        defer { reader.close() }
        // Short time slices, on kernels that honour them: the broadcast path's loops (the ingest
        // loop also serves the provider API) preempt background work as soon as they wake, and
        // the personal loop, once preempted... holds a CPU for at most a short slice at a time.
        for loop in [broadcastLoop, ingestLoop, personalLoop] where (try? loop.requestShortSlices(Self.broadcastPathSlice)) != true {
            log.warning("the kernel refused short time slices for \(loop.name); a goal may wait behind background work for a time slice")
        }
        if configuration.personalQueue.niceness > 0,
           (try? personalLoop.lowerThreadPriority(niceness: Int32(configuration.personalQueue.niceness))) != true {
            log.warning("the personal loop's thread priority could not be lowered; it runs at the same priority as the others")
        }
        do {
            // Broadcasts and channel management on the broadcast loop; device pushes on the personal loop.
            let apns = try connectAPNs(broadcastLoop, personalLoop)
            let connections = apns.broadcast
            var keyReloads: [String: APNsKeyReload] = [:]
            if configuration.apns != nil, let token = apns.providerToken {
                keyReloads[AppChannelID.defaultApp] = APNsKeyReload(app: AppChannelID.defaultApp, token: token, keyFile: settings.keyPath,
                                                                    source: configurationSource, renewConnections: apns.renewConnections)
            }
            for app in configuration.apps {
                guard let dispatch = apns.otherApps[app.name] else { continue }
                keyReloads[app.name] = APNsKeyReload(app: app.name, token: dispatch.providerToken, keyFile: app.apns.keyPath,
                                                     source: configurationSource, renewConnections: dispatch.renewConnections)
            }
            let webhooks = try WebhookDelivery.forStores(loop: webhookLoop, settings: configuration.webhooks, stores: stores,
                                                       clock: clock, log: log.named("webhooks"))
            let broadcastPressure = BroadcastPressure(threshold: configuration.personalQueue.yieldThreshold)
            let personal = PersonalDispatcher(loop: personalLoop, apns: apns.personal,
                                                     reader: try stores.personalReader(), store: personalStore, clock: clock,
                                                     settings: configuration.personalQueue,
                                                     tokenEnvironment: TokenEnvironment(apns: settings.environment),
                                                     broadcastPressure: broadcastPressure, webhooks: webhooks,
                                                     log: log.named("personal"))
            // Each other app's jobs run in a queue of their own, through its own pool.
            let appPersonal = try configuration.apps.compactMap { app -> PersonalDispatcher? in
                guard let dispatch = apns.otherApps[app.name] else { return nil }
                return PersonalDispatcher(loop: personalLoop, apns: dispatch.personal, reader: try stores.personalReader(), store: personalStore,
                                          clock: clock, settings: app.personalQueue.applied(to: configuration.personalQueue),
                                          tokenEnvironment: TokenEnvironment(apns: app.apns.environment), broadcastPressure: broadcastPressure,
                                          webhooks: webhooks, app: app.name, log: log.named("personal.\(app.name)"))
            }
            // A cluster's personal jobs: any gateway takes them, the partitions' owners run their slices.
            let sharedJobs = try cluster.map { cluster in
                try SharedJobs.start(on: cluster, dispatcher: personal, appDispatchers: appPersonal, store: personalStore, reader: try stores.personalReader(),
                                     outbox: webhooks.outbox, clock: clock,
                                     log: log.named("personal"))
            }
            let tokenReader = try stores.personalReader()
            let service = ChannelService(loop: ingestLoop, store: store,
                                         broadcastPressure: broadcastPressure,
                                         dispatcher: BroadcastDispatcher(apns: connections, ingestLoop: ingestLoop,
                                                                       pressure: broadcastPressure),
                                         otherApps: Dictionary(uniqueKeysWithValues: configuration.apps.compactMap { app in
                                             apns.otherApps[app.name].map { dispatch in
                                                 (app.name, ChannelService.AppChannels(
                                                    dispatcher: BroadcastDispatcher(apns: dispatch.broadcast, ingestLoop: ingestLoop, pressure: broadcastPressure),
                                                    defaultPolicy: app.defaultPolicy ?? configuration.defaultPolicy))
                                             }
                                         }),
                                         personal: personal, appPersonal: appPersonal, webhooks: webhooks, ownership: cluster ?? AllChannels(),
                                         recordings: cluster.map { ClusterFeedRecordings(store: $0.store) as any FeedRecordings }
                                             ?? StoredFeedRecordings(openReader: stores.channelReader),
                                         configuration: configuration, clock: clock, log: log.named("channels"))
            let httpConfiguration = HTTPServerConfiguration(host: configuration.listenHost, port: configuration.listenPort,
                                                            maxBodySize: configuration.maxBodyBytes, connectionLimits: configuration.http)
            let access = APIAccess(keys: configuration.apiKeys, apps: Set(configuration.apps.map(\.name)))
            let httpLog = log.named("http")
            let unsafeReader = UncheckedReader(reader: reader)
            let intake = PersonalJobIntake(loop: ingestLoop, clock: clock, personalStore: personalStore, tokenReader: tokenReader,
                                           personal: personal, appPersonal: appPersonal, sharedJobs: sharedJobs,
                                           idempotency: configuration.idempotency)
            try ingestLoop.sync { service.audienceStarter = { [intake] jobs, completion in intake.storeRolloverStarts(jobs, completion: completion) } }
            // A scheduled kickoff becomes its channel's audience (for rollovers) when it starts.
            try personalLoop.sync {
                for dispatcher in [personal] + appPersonal {
                    dispatcher.scheduledStartBegan = { [service] template, channel in service.rememberKickoff(template, into: channel) }
                }
            }
            let tokens = TokensAPI(loop: ingestLoop, clock: clock, personalStore: personalStore, tokenReader: tokenReader,
                                   isKnownChannel: { [service] id in service.channels[id] != nil })
            // Every route of the gateway with its scope: the admission hook and the API
            // document's test read this same table.
            let operators = OperatorsAPI(service: service, intake: intake, personalStore: personalStore, cluster: cluster,
                                         configuration: configuration, clock: clock)
            let router = APIRouter(access: access, features: [
                service, tokens, PersonalAPI(intake: intake), KickoffAPI(channels: service, intake: intake), DeadLettersAPI(intake: intake, instance: cluster?.settings.instance.name),
                WebhookEventsAPI(loop: ingestLoop, webhooks: webhooks), operators, APNsKeyAPI(reloads: keyReloads, log: log.named("apns")),
                DashboardAPI(service: service, operators: operators),
            ])
            let server = try ingestLoop.sync { () throws -> UncheckedServer in
                // Stored personal jobs are queued on the personal loop before the API can hand
                // it a new job; those found unusable are reported back to the intake.
                // On a cluster, once this gateway's copy of the token registry has caught up
                // (a job walking it earlier would miss tokens).
                let registry = personalStore as? SharedTokenRegistry
                let resumePersonalJobs = { (openChannels: Set<String>) in
                    for dispatcher in [personal] + appPersonal {
                        dispatcher.resumeStoredJobs(openChannels: openChannels, once: { registry?.isCaughtUp ?? true }) { broken in
                            ingestLoop.execute { intake.brokenJobs.merge(broken) { $1 } }
                        }
                    }
                }
                if let cluster {
                    // A cluster gateway owns nothing yet: it takes partitions up as their leases
                    // come, and runs the slices of the cluster's jobs that belong to them.
                    resumePersonalJobs([])
                    if let sharedJobs {
                        cluster.partitionsChanged = { owned in personalLoop.execute { sharedJobs.ownershipChanged(owned) } }
                    }
                    try cluster.start(service: service, router: router)
                } else {
                    try service.restore(from: unsafeReader.reader, resumePersonalJobs: resumePersonalJobs)
                }
                var serverConfiguration = httpConfiguration
                serverConfiguration.admission = Admission(access: access, router: router, limits: operators.requestLimits).decide
                serverConfiguration.probePaths = OperatorsAPI.probePaths
                let server = try HTTPServer(loop: ingestLoop, configuration: serverConfiguration, log: httpLog) { request in
                    // In a cluster, a request for a channel another gateway owns is handed to it.
                    if let cluster { cluster.route(request) } else { router.handle(request) }
                }
                operators.httpServer = server
                return UncheckedServer(server: server)
            }
            webhooks.start()
            return Running(ingestLoop: ingestLoop, broadcastLoop: broadcastLoop, personalLoop: personalLoop, webhookLoop: webhookLoop,
                           webhooks: webhooks, personal: personal, appPersonal: appPersonal, store: store,
                           personalStore: personalStore, connections: connections,
                           appConnections: apns.otherApps.values.map(\.broadcast),
                           service: service, tokenReader: UncheckedTokenReader(reader: tokenReader), router: router, server: server, mock: mock,
                           cluster: cluster, keyReloads: keyReloads, port: server.server.port)
        } catch {
            loops.forEach { $0.stopAndWait() }
            store.close()
            personalStore.close()
            cluster?.close()
            throw error
        }
    }

    /// The reader is opened here and used once on the ingest loop while this thread waits.
    private struct UncheckedReader: @unchecked Sendable { let reader: any ChannelStoreReader }
    /// The ingest loop's registry reader, carried in `Running`; used and closed on that loop only.
    private struct UncheckedTokenReader: @unchecked Sendable { let reader: any PersonalStoreReader }

    /// Runs the gateway as a service: starts it (stores, loops, APNs connections, webhook
    /// delivery, the personal queue, the channels, then the HTTP server; the blocking parts on a
    /// thread of their own, never on Swift's cooperative threads), tells `started` the bound
    /// port, waits for the first of `requests`, shuts down gracefully in the reverse order (a
    /// second request cuts every grace short: see ``ShutdownRequests``), and returns once all is
    /// closed. Cancelling the task is an immediate stop. Throws only when the start fails.
    public func run(until requests: ShutdownRequests, requestGracePeriod: Duration = .seconds(2), apnsGracePeriod: Duration = .seconds(3),
                    started: (Int) -> Void = { _ in }) async throws {
        let port = try await DedicatedThread.run(name: "touchline-start") { [self] in try start() }
        started(port)
        await withTaskCancellationHandler {
            await requests.firstRequest()
        } onCancel: {
            requests.request("task cancelled")
            requests.request("task cancelled")
        }
        await shutdown(requestGracePeriod: requestGracePeriod, apnsGracePeriod: apnsGracePeriod, requests: requests)
    }

    /// Stops within a bounded time (about `requestGracePeriod + apnsGracePeriod`, well inside
    /// the 10 s a container runtime waits before SIGKILL) without losing anything acknowledged:
    ///
    /// 1. stops accepting connections; requests in flight are answered for up to
    ///    `requestGracePeriod` (a 202 still only after its commit), new requests on open
    ///    connections get 503 `shutting_down`, and whatever is unanswered then is abandoned
    ///    (its event may be stored, but was never acknowledged);
    /// 2. stops sending and the channel timers: what is not yet sent stays pending in the channel
    ///    snapshots and goes out after the next start;
    /// 3. closes the broadcast and personal APNs connections together, giving pushes in flight
    ///    up to `apnsGracePeriod` for their answers (a push still unanswered is saved as pending;
    ///    personal jobs save their progress and resume);
    /// 4. meanwhile stops webhook delivery, giving attempts in flight the same grace for their
    ///    answers (outcomes are saved; an attempt still unanswered stays pending and goes again);
    /// 5. commits everything queued to the store and closes it, then stops the loops and the mock.
    public func shutdown(requestGracePeriod: Duration = .seconds(2), apnsGracePeriod: Duration = .seconds(3)) async {
        await shutdown(requestGracePeriod: requestGracePeriod, apnsGracePeriod: apnsGracePeriod, requests: nil)
    }

    /// The shutdown, in the reverse order of the start; a second of `requests` cuts every grace
    /// short (the step under way at once, the later ones by taking no grace).
    func shutdown(requestGracePeriod: Duration, apnsGracePeriod: Duration, requests: ShutdownRequests?) async {
        guard let current = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        let isCutShort: @Sendable () -> Bool = { requests?.isEscalated ?? false }
        // Each step reads `isCutShort` on its own loop as it begins, and the cut is queued on the
        // same loops after the flag is set: a step begun before the escalation is cut by it, one
        // begun after takes no grace.
        let escalation = Task {
            guard let requests else { return }
            await requests.escalation()
            guard !Task.isCancelled else { return }
            log.warning("a second stop request: stopping now, without waiting for answers in flight")
            current.cutShort()
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            current.ingestLoop.execute {
                current.server.server.shutdown(gracePeriod: isCutShort() ? .zero : requestGracePeriod) {
                    current.service.stop()
                    current.tokenReader.reader.close()
                    done.resume()
                }
            }
        }
        // Webhook attempts in flight get the same grace as pushes, at the same time; their
        // outcomes are queued before the stores close, and attempts still out then stay pending.
        async let broadcast: Void = current.connections.shutdown(gracePeriod: apnsGracePeriod, isCutShort: isCutShort)
        async let apps: Void = withTaskGroup(of: Void.self) { group in
            for dispatch in current.appConnections { group.addTask { await dispatch.shutdown(gracePeriod: apnsGracePeriod, isCutShort: isCutShort) } }
            for queue in current.appPersonal { group.addTask { await queue.shutdown(gracePeriod: apnsGracePeriod, isCutShort: isCutShort) } }
        }
        async let personal: Void = current.personal.shutdown(gracePeriod: apnsGracePeriod, isCutShort: isCutShort)
        async let webhooks: Void = current.webhooks.stop(gracePeriod: apnsGracePeriod, isCutShort: isCutShort)
        _ = await (broadcast, apps, personal, webhooks)
        escalation.cancel()
        // Answers delivered during the pool shutdown run (and queue their saves) before the close.
        _ = try? await current.ingestLoop.submit {}
        // A cluster gateway gives its partitions up (the others take them over at once), once
        // what it queued is stored.
        if let cluster = current.cluster {
            await DedicatedThread.run(name: "touchline-store-drain") { current.store.close() }
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                current.ingestLoop.execute { cluster.leave { done.resume() } }
            }
        }
        // Commits what is queued and joins the threads: blocking, so on a thread of its own.
        await DedicatedThread.run(name: "touchline-shutdown") {
            current.webhooks.close()
            current.webhookLoop.stopAndWait()
            current.store.close()
            current.personalStore.close()
            current.ingestLoop.stopAndWait()
            current.broadcastLoop.stopAndWait()
            current.personalLoop.stopAndWait()
            current.cluster?.close()
            current.mock?.stop()
        }
    }
}
