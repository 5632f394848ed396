import Synchronization
import TouchlineAccess
import TouchlineChannels
import TouchlineCore
import TouchlineOperators
import TouchlinePersonal
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
    /// What the HTTP server hands each request to: admission, then the backend's front of the
    /// router (also reachable without a socket, ``Gateway/front``).
    let requests: RequestFront
    private let operators: OperatorsAPI
    private let intake: PersonalJobIntake
    private let queues: PerApp<PersonalDispatcher>
    /// Restores the channels (or takes partitions up), and whose registry copy jobs wait for.
    private let backend: any StartedBackend
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
         queues: PerApp<PersonalDispatcher>, backend: any StartedBackend, reader: any ChannelStoreReader, tokenReader: any PersonalStoreReader, configuration: HTTPServerConfiguration, log: GatewayLog) {
        self.loop = loop
        self.service = service
        self.router = router
        requests = RequestFront(loop: loop, admission: Admission(access: access, router: router, limits: operators.requestLimits).decide,
                                route: backend.front(to: router))
        self.operators = operators
        self.intake = intake
        self.queues = queues
        self.backend = backend
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

    /// On the ingest loop: the channels restored (on a cluster, taken up as leases come), then the server.
    private func restoreAndListen() throws -> UncheckedServer {
        // Stored personal jobs are read here and queued on the personal loop before the API
        // can store a new job, so a job reaches its queue one way only (the resume, or the
        // intake after its commit); those found unusable are reported back to the intake.
        // On a cluster they start once this gateway's copy of the token registry has caught up
        // (a job walking it earlier would miss tokens).
        let registry = backend.registry
        let resumePersonalJobs = { [queues, intake, loop, log, tokenReader] (openChannels: Set<String>) in
            let stored: [PersonalJobRecord]
            do {
                stored = try [PersonalJobStatus.running, .pending].flatMap { status throws(StoreError) in try tokenReader.reader.jobs(status: status, limit: 10_000) }
            } catch {
                log.error("reading unfinished personal jobs failed; they resume at the next start", error: error)
                stored = []
            }
            for queue in queues.all {
                queue.resumeStoredJobs(stored, openChannels: openChannels, once: { registry.isCaughtUp }) { broken in
                    loop.execute { intake.brokenJobs.merge(broken) { $1 } }
                }
            }
        }
        try backend.begin(service: service, router: router, reader: reader.reader, resumePersonalJobs: resumePersonalJobs)
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
