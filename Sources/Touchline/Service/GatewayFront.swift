import Synchronization
import TouchlineAccess
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore

/// The channels and the provider API they serve, on the ingest loop: the last part to start
/// and the first to shut down.
///
/// Its start restores the stored channels (on a cluster, takes partitions up as their leases
/// come) after queueing every app's stored personal jobs, then listens. Its shutdown stops
/// accepting connections and answers the requests in flight for up to the requests' grace (a
/// 202 still only after its commit; new requests on open connections get 503 `shutting_down`;
/// what is unanswered then is abandoned, its event maybe stored but never acknowledged), then
/// stops sending and the channel timers: what is not sent yet stays pending in the snapshots.
final class GatewayFront: GatewayService {
    let loop: EventLoop
    let service: ChannelService
    let router: APIRouter
    /// What the HTTP server hands each request to: admission, then the cluster's front or the
    /// router (also reachable without a socket, ``Gateway/front``).
    let requests: RequestFront
    private let operators: OperatorsAPI
    private let intake: PersonalJobIntake
    private let queues: PerApp<PersonalDispatcher>
    private let cluster: ClusterNode?
    private let sharedJobs: SharedJobs?
    /// The personal store: on a cluster, the shared registry whose copy jobs wait for.
    private let personalStore: any PersonalStoreWriter
    private let configuration: HTTPServerConfiguration
    private let log: GatewayLog
    /// The channels' reader, used once by the start while the starting thread waits.
    private let reader: UncheckedReader
    /// The registry's read connection of the ingest loop's features, closed there at shutdown.
    private let tokenReader: UncheckedTokenReader
    /// The HTTP server once it listens (made, used and shut down on the ingest loop).
    private let server = Mutex<UncheckedServer?>(nil)

    /// The HTTP server, used on the ingest loop only.
    private struct UncheckedServer: @unchecked Sendable { let server: HTTPServer }
    /// The reader is opened by the assembly and used once on the ingest loop while it waits.
    private struct UncheckedReader: @unchecked Sendable { let reader: any ChannelStoreReader }
    /// The ingest loop's registry reader; used and closed on that loop only.
    private struct UncheckedTokenReader: @unchecked Sendable { let reader: any PersonalStoreReader }

    init(loop: EventLoop, service: ChannelService, router: APIRouter, access: APIAccess, operators: OperatorsAPI, intake: PersonalJobIntake,
         queues: PerApp<PersonalDispatcher>, cluster: ClusterNode?, sharedJobs: SharedJobs?, personalStore: any PersonalStoreWriter,
         reader: any ChannelStoreReader, tokenReader: any PersonalStoreReader, configuration: HTTPServerConfiguration, log: GatewayLog) {
        self.loop = loop
        self.service = service
        self.router = router
        requests = RequestFront(loop: loop, admission: Admission(access: access, router: router, limits: operators.requestLimits).decide) {
            [router, cluster] request in
            // In a cluster, a request for a channel another gateway owns is handed to it.
            if let cluster { cluster.route(request) } else { router.handle(request) }
        }
        self.operators = operators
        self.intake = intake
        self.queues = queues
        self.cluster = cluster
        self.sharedJobs = sharedJobs
        self.personalStore = personalStore
        self.reader = UncheckedReader(reader: reader)
        self.tokenReader = UncheckedTokenReader(reader: tokenReader)
        self.configuration = configuration
        self.log = log
    }

    /// The port it listens on (nil before its start).
    var port: Int? { server.withLock { $0?.server.port } }

    func start() throws {
        let started = try loop.sync { [self] () throws -> UncheckedServer in
            do {
                return try restoreAndListen()
            } catch {
                // A start that failed half-way sends nothing more while its parts close.
                service.stop()
                throw error
            }
        }
        server.withLock { $0 = started }
    }

    /// On the ingest loop: the channels restored (or taken up as leases come), then the server.
    private func restoreAndListen() throws -> UncheckedServer {
        // Stored personal jobs are queued on the personal loop before the API can hand
        // it a new job; those found unusable are reported back to the intake.
        // On a cluster, once this gateway's copy of the token registry has caught up
        // (a job walking it earlier would miss tokens).
        let registry = personalStore as? SharedTokenRegistry
        let resumePersonalJobs = { [queues, intake, loop] (openChannels: Set<String>) in
            for queue in queues.all {
                queue.resumeStoredJobs(openChannels: openChannels, once: { registry?.isCaughtUp ?? true }) { broken in
                    loop.execute { intake.brokenJobs.merge(broken) { $1 } }
                }
            }
        }
        if let cluster {
            // A cluster gateway owns nothing yet: it takes partitions up as their leases
            // come, and runs the slices of the cluster's jobs that belong to them.
            resumePersonalJobs([])
            if let sharedJobs {
                let personalLoop = sharedJobs.loop
                cluster.partitionsChanged = { owned in personalLoop.execute { sharedJobs.ownershipChanged(owned) } }
            }
            try cluster.start(service: service, router: router)
        } else {
            try service.restore(from: reader.reader, resumePersonalJobs: resumePersonalJobs)
        }
        var serverConfiguration = configuration
        serverConfiguration.admission = requests.admission
        serverConfiguration.probePaths = OperatorsAPI.probePaths
        let server = try HTTPServer(loop: loop, configuration: serverConfiguration, log: log, handler: requests.route)
        operators.httpServer = server
        return UncheckedServer(server: server)
    }

    func shutdown(_ grace: ShutdownGrace) async {
        guard let current = server.withLock({ $0 }) else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                current.server.shutdown(gracePeriod: grace.isCutShort() ? .zero : grace.requests) { [self] in
                    service.stop()
                    tokenReader.reader.close()
                    done.resume()
                }
            }
        }
    }

    func cutShort() {
        guard let current = server.withLock({ $0 }) else { return }
        loop.execute { current.server.cutShutdownShort() }
    }
}
