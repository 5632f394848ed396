import NATS
import NATSServers
import Touchline
import TouchlineRuntime
import TouchlineTesting

/// The NATS cluster under a cluster gateway test, of either kind (``NATSBackend``):
///
/// - `.servers`: three nats-server processes on loopback, for what only real servers show (a
///   server or a gateway process killed, a migration dialling the servers, leases and elections
///   over the network); such a test takes three heavy slots;
/// - `.inMemory`: an ``InMemoryNATSCluster`` in this process, held to the same contract tests as
///   the servers, for the gateways' own behaviour on a cluster (forwarding, ownership and its
///   hand-over, the job and token buckets, webhooks and dead letters across gateways): no process
///   to start and no election to wait for. Its gateways still connect to the mock APNs over TLS
///   and listen on loopback, so such a test takes one heavy slot.
enum ClusterUnderTest: Sendable {
    case servers(NATSCluster)
    case inMemory(InMemoryNATSCluster)

    /// A fresh cluster of `backend`'s kind with these subject mappings (source to destination,
    /// as in the servers' configuration).
    static func start(_ backend: NATSBackend, mappings: [String: String] = [:]) async throws -> ClusterUnderTest {
        switch backend {
        case .servers:
            return .servers(try await NATSCluster.start(mappings: mappings))
        case .inMemory:
            let parsed = mappings.sorted { $0.key < $1.key }.compactMap { SubjectMapping(source: $0.key, destination: $0.value) }
            guard parsed.count == mappings.count else { throw ClusterPersonalJobTests.Failure("mappings the in-memory cluster cannot apply: \(mappings)") }
            return .inMemory(InMemoryNATSCluster(mappings: parsed))
        }
    }

    /// The real servers (nil in memory), for a test that kills one or dials them itself.
    var servers: NATSCluster? {
        if case .servers(let servers) = self { servers } else { nil }
    }

    /// The server URLs a gateway's settings name (an in-memory cluster's gateways dial none).
    var urls: [String] {
        switch self {
        case .servers(let servers): servers.urls
        case .inMemory: ["nats://in-memory"]
        }
    }

    /// How a gateway in this process reaches the cluster; it connects to APNs as configured.
    var backends: Gateway.Backends {
        switch self {
        case .servers: .standard
        case .inMemory(let cluster): .inMemoryCluster(cluster)
        }
    }

    /// A JetStream client of the test's own named `name`, its events on `loop`; the caller
    /// closes its `messaging` connection.
    func connect(name: String, loop: EventLoop) throws -> any JetStreamClient {
        switch self {
        case .servers(let servers): try JetStream(try servers.connect(name: name, loop: loop))
        case .inMemory(let cluster): InMemoryJetStream(cluster.connect(name: name))
        }
    }
}
