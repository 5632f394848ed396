import APNs
import APNsMock
import Foundation
import Synchronization
import TouchlineAccess
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlineOperators
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

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
        /// Every part, in the order it started: the shutdown takes them in the reverse order.
        var services: GatewayServices
        /// Every loop of the gateway, stopped by a gateway released while it runs (`deinit`).
        var loops: [EventLoop]
        /// Each app's pools, personal queue, dispatcher and key reload, by name.
        var apps: PerApp<AppRuntime>
        var router: APIRouter
        /// What the HTTP server hands each request to, also reachable without a socket (``front``).
        var front: RequestFront
        var mock: MockAPNsServer?
        /// What it stores into and how it shares its work (on its own, or a cluster member).
        var backend: any StartedBackend
        var port: Int
    }

    /// The routes the running gateway serves, with who may call each (empty once shut down):
    /// the API document is checked against this table.
    var routes: [APIRouter.Route] {
        running.withLock { $0?.router.routes ?? [] }
    }

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
        let reloads = running.withLock { $0?.apps.keyReloads ?? [:] }
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
        for loop in current.loops where !loop.inEventLoop {
            loop.stopAndWait()
        }
        current.backend.release()
        current.mock?.stop()
    }

    /// The mock APNs started in-process because `configuration.apns` is nil (nil otherwise).
    public var bundledMockAPNs: MockAPNsServer? { running.withLock { $0?.mock } }

    /// The port the provider API listens on, once started.
    public var port: Int? { running.withLock { $0?.port } }

    /// The provider API's admission and routing as the HTTP server runs them, while the gateway
    /// runs (tests send requests through it without a socket: ``RequestFront``).
    package var front: RequestFront? { running.withLock { $0?.front } }

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
        let services = GatewayServices()
        do {
            let started = try start(into: services)
            running.withLock { $0 = started }
            return started.port
        } catch {
            services.closeAll()
            throw error
        }
    }

    /// Makes and starts the gateway's parts in order, each once what it needs runs: the bundled
    /// mock (development mode), the loops, the backend (a cluster member's node, the stores), what
    /// waits for answers (every app's APNs pools and personal queue, webhook delivery), then the
    /// channels with the HTTP server (``GatewayFront``). The shutdown takes them in the reverse order.
    private func start(into services: GatewayServices) throws -> Running {
        let mock: MockAPNsServer?
        let settings: GatewayConfiguration.APNsSettings
        switch (configuration.apnsMode, configuration.apns) {
        case (.apple, let configured?):
            (mock, settings) = (nil, configured)
        case (.apple, nil):
            throw GatewayError.startup(GatewayConfiguration.missingCredentials)
        case (.mock, nil):
            let bundled = try services.start(BundledMockService(dataDirectory: configuration.dataDirectory))
            (mock, settings) = (bundled.server, bundled.settings)
        case (.mock, _?):
            throw GatewayError.startup("APNs credentials are set but development mode sends to the bundled mock APNs: remove one of them")
        }
        // The stores and APNs through their protocols: SQLite and APNs connections by default
        // (`Backends`); the provider tokens are checked before anything else starts.
        let connectAPNs = try backends.apns(APNsContext(configuration: configuration, settings: settings, clock: clock, log: log))
        let loops = try services.start(GatewayLoops(personalNiceness: configuration.personalQueue.niceness, log: log))
        // On its own or a cluster member: the stores, ownership, job board and request front.
        let backend = try backends.backend(for: configuration).start(into: services, loops: loops, configuration: configuration, clock: clock, log: log)
        let stores = backend.stores
        let reader = try stores.channelReader()
        defer { reader.close() }
        // Broadcasts and channel management on the broadcast loop; device pushes on the personal loop.
        let dispatches = try connectAPNs(loops.broadcast, loops.personal).apps
        let webhooks = try WebhookDeliveryService(settings: configuration.webhooks, stores: stores, clock: clock, log: log.named("webhooks"))
        let broadcastPressure = BroadcastPressure(threshold: configuration.personalQueue.yieldThreshold)
        let apps: PerApp<AppRuntime>
        do {
            apps = try appRuntimes(dispatches, settings: settings, loops: loops, stores: stores, webhooks: webhooks.delivery,
                                   broadcastPressure: broadcastPressure)
        } catch {
            webhooks.close()
            throw error
        }
        let pools: [any GatewayService] = apps.all.flatMap { app -> [any GatewayService] in [BroadcastPools(dispatch: app.apns.broadcast), app.personal] }
        try services.start(AnswersInFlight(parts: pools + [webhooks], ingestLoop: loops.ingest))
        let front = try services.start(try front(apps: apps, loops: loops, backend: backend, reader: reader,
                                                 webhooks: webhooks.delivery, broadcastPressure: broadcastPressure))
        return Running(services: services, loops: [loops.ingest, loops.broadcast, loops.personal, webhooks.loop], apps: apps,
                       router: front.router, front: front.requests, mock: mock, backend: backend, port: front.port ?? 0)
    }

    /// Every app's runtime, the default app's among them: its pools, a personal queue of its
    /// own (its jobs, through its own pool), its channels' dispatcher, and its key reload when
    /// the configuration names its key (not the bundled mock's).
    private func appRuntimes(_ dispatches: [String: AppDispatch], settings: GatewayConfiguration.APNsSettings, loops: GatewayLoops,
                             stores: GatewayStores, webhooks: WebhookDelivery, broadcastPressure: BroadcastPressure) throws -> PerApp<AppRuntime> {
        let credentialed = Set(configuration.credentialedApps.map(\.name))
        var runtimes: [String: AppRuntime] = [:]
        for app in configuration.servedApps(apns: settings) {
            guard let dispatch = dispatches[app.name] else { continue }
            let personal = PersonalDispatcher(loop: loops.personal, apns: dispatch.personal, reader: try stores.personalReader(), store: stores.personal,
                                              clock: clock, settings: app.personalQueue.applied(to: configuration.personalQueue),
                                              tokenEnvironment: TokenEnvironment(apns: app.apns.environment), broadcastPressure: broadcastPressure,
                                              webhooks: webhooks, app: app.name, log: log.named(Self.component("personal", of: app.name)))
            let keyReload = dispatch.providerToken.flatMap { token in
                credentialed.contains(app.name) ? APNsKeyReload(app: app.name, token: token, keyFile: app.apns.keyPath,
                                                               source: configurationSource) : nil
            }
            runtimes[app.name] = AppRuntime(name: app.name, apns: dispatch,
                                            broadcast: BroadcastDispatcher(apns: dispatch.broadcast, ingestLoop: loops.ingest, pressure: broadcastPressure),
                                            personal: personal, defaultPolicy: app.defaultPolicy(in: configuration), keyReload: keyReload)
        }
        return PerApp(runtimes)
    }

    /// The channels, the job intake and every route, wired together, and the part that serves
    /// them (not started yet).
    private func front(apps: PerApp<AppRuntime>, loops: GatewayLoops, backend: any StartedBackend, reader: any ChannelStoreReader,
                       webhooks: WebhookDelivery, broadcastPressure: BroadcastPressure) throws -> GatewayFront {
        let stores = backend.stores
        let (ingestLoop, personalStore) = (loops.ingest, stores.personal)
        let queues = apps.map { $1.personal }
        // On a cluster, any gateway takes personal jobs and the partitions' owners run their slices.
        let jobBoard = try backend.jobBoard(queues: queues, loop: loops.personal, outbox: webhooks.outbox, clock: clock, log: log.named("personal"))
        let tokenReader = try stores.personalReader()
        let service = ChannelService(loop: ingestLoop, store: stores.channels, broadcastPressure: broadcastPressure, apps: apps.map { $1.channels },
                                     webhooks: webhooks, ownership: backend.ownership, recordings: backend.recordings,
                                     configuration: configuration, clock: clock, log: log.named("channels"))
        let access = APIAccess(keys: configuration.apiKeys, apps: Set(configuration.apps.map(\.name)))
        let lookups = backend.tokenLookups(reader: tokenReader, loop: ingestLoop)
        let intake = PersonalJobIntake(loop: ingestLoop, clock: clock, personalStore: personalStore, tokenReader: tokenReader, lookups: lookups,
                                       queues: queues, jobBoard: jobBoard, idempotency: configuration.idempotency)
        try ingestLoop.sync { service.audienceStarter = { [intake] jobs, completion in intake.storeRolloverStarts(jobs, completion: completion) } }
        // A scheduled kickoff becomes its channel's audience (for rollovers) when it starts.
        try loops.personal.sync {
            for queue in queues.all {
                queue.scheduledStartBegan = { [service] template, channel in service.rememberKickoff(template, into: channel) }
            }
        }
        let tokens = TokensAPI(loop: ingestLoop, clock: clock, personalStore: personalStore, lookups: lookups, registry: backend.registry,
                               isKnownChannel: { [service] id in service.channels[id] != nil })
        // Every route of the gateway with its scope: the admission hook and the API
        // document's test read this same table.
        let operators = OperatorsAPI(service: service, intake: intake, personalStore: personalStore, backend: backend.operatorView,
                                     configuration: configuration, clock: clock)
        let router = APIRouter(access: access, features: [
            service, tokens, PersonalAPI(intake: intake), KickoffAPI(channels: service, intake: intake), DeadLettersAPI(intake: intake, instance: backend.instanceName),
            WebhookEventsAPI(loop: ingestLoop, webhooks: webhooks), operators, APNsKeyAPI(reloads: apps.keyReloads, log: log.named("apns")),
            DashboardAPI(service: service, operators: operators),
        ])
        let http = HTTPServerConfiguration(host: configuration.listenHost, port: configuration.listenPort,
                                           maxBodySize: configuration.maxBodyBytes, connectionLimits: configuration.http)
        return GatewayFront(loop: ingestLoop, service: service, router: router, access: access, operators: operators, intake: intake,
                            queues: queues, backend: backend, reader: reader,
                            tokenReader: tokenReader, configuration: http, log: log.named("http"))
    }

    /// Runs the gateway as a service: starts it (the bundled mock, loops, cluster node, stores,
    /// APNs connections, personal queues and webhook delivery, the channels, then the HTTP
    /// server; the blocking parts on a thread of their own, never on Swift's cooperative
    /// threads), tells `started` the bound port, waits for the first of `requests`, shuts down
    /// gracefully in the reverse order (a second request cuts every grace short: see
    /// ``ShutdownRequests``), and returns once all is closed. Cancelling the task is an
    /// immediate stop. Throws only when the start fails.
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

    /// The shutdown: the parts in the reverse order of their start (``GatewayServices``); a
    /// second of `requests` cuts every grace short (the step under way at once, the later ones by
    /// taking no grace).
    func shutdown(requestGracePeriod: Duration, apnsGracePeriod: Duration, requests: ShutdownRequests?) async {
        guard let current = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        let grace = ShutdownGrace(requests: requestGracePeriod, answers: apnsGracePeriod, isCutShort: { requests?.isEscalated ?? false })
        let escalation = Task {
            guard let requests else { return }
            await requests.escalation()
            guard !Task.isCancelled else { return }
            log.warning("a second stop request: stopping now, without waiting for answers in flight")
            current.services.cutShort()
        }
        await current.services.shutdown(grace)
        escalation.cancel()
    }
}
