import Foundation
import Glibc
import NATS
import NATSServers
import Synchronization
import Testing
import TouchlineRuntime

/// Subscriptions on a live server, dropped: they are destroyed only once the client's read
/// loop cannot be using them (``SubscriptionRetirement``).
@Suite(.timeLimit(.minutes(2)))
struct NATSSubscriptionTests {
    /// At once while the server answers, not while it is stopped, then once it answers again.
    @Test func aDroppedSubscriptionIsDestroyedAfterARoundTripThroughTheReadLoop() async throws {
        let cluster = try await NATSCluster.start(size: 1)
        let loop = EventLoop.start(name: "nats-retirement")
        defer { loop.stop() }
        let connection = try cluster.connect(name: "retiring", loop: loop)
        defer { connection.close() }
        func subscribeAndDrop() throws { _ = try connection.subscribe(to: "retire.m1", queue: nil, loop: loop) { _ in } }

        try subscribeAndDrop()
        try await Self.waitUntil("the dropped subscription is destroyed") { connection.subscriptionsAwaitingDestruction == 0 }
        let server = try #require(cluster.runningProcesses.first)
        kill(server.pid, SIGSTOP)
        try await Self.waitUntil("the server is stopped") { Self.isStopped(server.pid) }
        try subscribeAndDrop()
        try await Task.sleep(for: .milliseconds(500))
        #expect(connection.subscriptionsAwaitingDestruction == 1, "destroyed without the round trip")
        kill(server.pid, SIGCONT)
        try await Self.waitUntil("destroyed once the server answers again") { connection.subscriptionsAwaitingDestruction == 0 }
    }

    /// Subscriptions dropped while their subject floods: the client's read loop is in the
    /// middle of one of their messages at some drop, and the subscription must outlive it
    /// (the NATS C client 3.4 reads a message's subscription without holding it).
    @Test func subscriptionsDroppedWhileTheirMessagesArriveAreNeverFreedUnderTheReadLoop() async throws {
        let cluster = try await NATSCluster.start(size: 1)
        let loop = EventLoop.start(name: "nats-subscriptions")
        defer { loop.stop() }
        let receiver = try cluster.connect(name: "receiver", loop: loop)
        let sender = try cluster.connect(name: "sender", loop: loop)
        defer { receiver.close(); sender.close() }
        let flooding = Atomic<Bool>(true)
        let flood = Thread {
            let payload = [UInt8](repeating: 7, count: 64)
            while flooding.load(ordering: .relaxed) { try? sender.publish(payload, to: "flood.m1", reply: nil) }
        }
        flood.start()
        defer { flooding.store(false, ordering: .relaxed) }
        for _ in 0..<300 {
            let heard = Atomic<Bool>(false)
            let subscription = try receiver.subscribe(to: "flood.m1", queue: nil, loop: loop) { _ in heard.store(true, ordering: .relaxed) }
            while !heard.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(1)) }
            // Dropped here, with the flood still arriving for it.
            withExtendedLifetime(subscription) {}
        }
    }

    /// The process's state in /proc is "T" (stopped): a stop signal takes effect a moment
    /// after it is sent.
    private static func isStopped(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let afterName = stat.range(of: ") ") else { return false }
        return stat[afterName.upperBound...].first == "T"
    }

    private static func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("not within 10 s: \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
