import NATS
import NATSServers
import Synchronization
import TestSlots
import Testing
import TouchlineRuntime

/// Where a test's clients (its gateways) meet: real nats-server processes on loopback, or an
/// ``InMemoryNATSCluster``. A test that takes it as an argument holds both to the same
/// assertions: the contract the cluster code relies on (docs/cluster.md, "Testing tiers").
public enum NATSBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// nats-server processes: a heavy test's slots (one per server) for the cluster's life.
    case servers
    case inMemory

    public var testDescription: String { rawValue }

    /// Runs `body` on a fresh cluster of this kind (`size` servers for a real one) with these
    /// subject mappings (source to destination, as in the servers' configuration); afterwards
    /// its clients are closed and the servers stopped.
    public func withCluster<T>(size: Int = 1, mappings: [String: String] = [:], _ body: (TestNATSCluster) async throws -> T) async throws -> T {
        switch self {
        case .inMemory:
            let parsed = mappings.sorted { $0.key < $1.key }.map { SubjectMapping(source: $0.key, destination: $0.value) }
            let known = parsed.compactMap { $0 }
            guard known.count == parsed.count else { throw UnknownMapping(mappings: mappings) }
            let cluster = TestNATSCluster(inMemory: InMemoryNATSCluster(mappings: known))
            defer { cluster.closeClients() }
            return try await body(cluster)
        case .servers:
            return try await HeavyTestSlots.shared.withSlots(size) {
                let servers = try await NATSCluster.start(size: size, mappings: mappings)
                let cluster = TestNATSCluster(servers: servers)
                do {
                    let result = try await body(cluster)
                    cluster.closeClients()
                    await servers.stop()
                    return result
                } catch {
                    cluster.closeClients()
                    await servers.stop()
                    throw error
                }
            }
        }
    }
}

/// Mappings the in-memory cluster cannot apply (``SubjectMapping``).
public struct UnknownMapping: Error {
    public let mappings: [String: String]
}

/// A cluster of either kind, as a test connects to it.
public final class TestNATSCluster: Sendable {
    /// The in-memory cluster's switches (nil for real servers).
    public let inMemory: InMemoryNATSCluster?
    /// The nats-server processes (nil in memory), for a test that kills one.
    public let servers: NATSCluster?
    private let clients = Mutex<[any MessagingClient]>([])

    init(inMemory: InMemoryNATSCluster) {
        self.inMemory = inMemory
        servers = nil
    }

    init(servers: NATSCluster) {
        self.servers = servers
        inMemory = nil
    }

    /// A client named `name` (a gateway's instance); its connection events, for real servers, go
    /// to `loop` and are dropped.
    public func connect(name: String, loop: EventLoop) throws(NATSError) -> any JetStreamClient {
        let jetStream: any JetStreamClient
        if let servers {
            jetStream = try JetStream(try servers.connect(name: name, loop: loop))
        } else {
            jetStream = InMemoryJetStream(inMemory!.connect(name: name))
        }
        clients.withLock { $0.append(jetStream.messaging) }
        return jetStream
    }

    func closeClients() {
        for client in clients.withLock({ $0 }) { client.close() }
    }
}
