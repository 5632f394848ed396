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
///   the servers, for the gateways' own behaviour on a cluster (ownership and its hand-over, the
///   job bucket, webhooks, reconciliation, recordings) where the test reads what the strict mock
///   saw (its latency, its channels, its check of a start's timestamp) or a receiver took: no
///   process to start and no election to wait for, but the mock over TLS and clients over
///   loopback, so such a test takes one heavy slot. (Tests that read only the API and what the
///   gateways asked of APNs run wholly in process: ``InProcessCluster``.)
enum ClusterUnderTest: Sendable {
    case servers(NATSCluster)
    case inMemory(InMemoryNATSCluster)

    /// A fresh cluster of `backend`'s kind.
    static func start(_ backend: NATSBackend) async throws -> ClusterUnderTest {
        switch backend {
        case .servers: .servers(try await NATSCluster.start())
        case .inMemory: .inMemory(InMemoryNATSCluster())
        }
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
