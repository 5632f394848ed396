import Foundation
@testable import NATSServers
import Synchronization
import Testing
import TestSlots

#if canImport(Glibc)
import Glibc
#endif

/// The test clusters' own start: a port chosen as free and taken before the node binds it.
@Suite("NATS test cluster start", .heavy)
struct NATSClusterStartTests {
    /// The first attempt's client port is held by the test (as another process would take it
    /// between the choice and the bind): the node's log says so at once, and the cluster starts
    /// again on new ports instead of waiting out the health timeout.
    @Test func aPortTakenBeforeTheNodeBindsItStartsTheClusterAgainOnNewPorts() async throws {
        let (held, descriptor) = try LoopbackSocket.listen(backlog: 1)
        defer { close(descriptor) }
        let attempts = Mutex(0)
        let started = ContinuousClock.now
        let cluster = try await NATSCluster.start(size: 1, mappings: [:]) { count in
            let fresh = NATSCluster.uniqueFreePorts(count)
            let attempt = attempts.withLock { $0 += 1; return $0 }
            return attempt == 1 ? [held] + fresh.dropFirst() : fresh
        }
        #expect(attempts.withLock { $0 } == 2)
        #expect(cluster.nodes[0].clientPort != held)
        #expect(ContinuousClock.now - started < .seconds(30), "the taken port was seen before the 60 s health wait ran out")
        await cluster.stop()
    }

    /// Ports are chosen below the kernel's range for outgoing connections, so no connection made
    /// while a node is down can take one before it binds it again; each distinct and free.
    @Test func portsAreChosenBelowTheOutgoingConnectionsRangeDistinctAndFree() throws {
        let ephemeral = NATSCluster.ephemeralPorts
        try #require(ephemeral.lowerBound > 11_024, "this kernel leaves no room below its outgoing range")
        for _ in 0..<20 {
            let ports = NATSCluster.uniqueFreePorts(9)
            #expect(Set(ports).count == 9)
            #expect(ports.allSatisfy { $0 >= 10_000 && $0 < ephemeral.lowerBound }, "\(ports) against \(ephemeral)")
            #expect(!ports.contains { LoopbackSocket.canConnect(port: $0) }, "a chosen port had a listener: \(ports)")
        }
    }
}
