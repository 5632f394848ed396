import Foundation
import HTTP2
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime

/// A pool on its own loop, for tests.
final class TestPool: @unchecked Sendable {
    let loop: EventLoop
    let pool: HTTP2ConnectionPool

    init(_ configuration: HTTP2PoolConfiguration, updateHeldRequest: (@Sendable (inout HTTP2Request) -> Void)? = nil) throws {
        let context = try TestPKI.shared.clientContext()
        loop = EventLoop.start(name: "test-pool")
        let loop = loop
        pool = try loop.sync {
            HTTP2ConnectionPool(loop: loop, context: context, configuration: configuration, updateHeldRequest: updateHeldRequest)
        }
    }

    func stats() throws -> HTTP2ConnectionPool.Stats {
        try loop.sync { [pool] in pool.stats }
    }

    func waitUntilReady(_ count: Int) async throws {
        try await waitUntil(on: loop, "\(count) ready connections") { [pool] in pool.stats.readyConnections == count }
    }

    /// Shuts the pool down and waits for its completion callback.
    func shutdown(gracePeriod: Duration = .seconds(5)) async throws {
        let done = ShutdownFlag()
        try loop.sync { [pool] in pool.shutdown(gracePeriod: gracePeriod) { done.value = true } }
        try await waitUntil(on: loop, timeout: gracePeriod + .seconds(5), "pool shutdown completion") { done.value }
    }

    func close() {
        try? loop.sync { [pool] in pool.shutdown(gracePeriod: .zero) }
        loop.stopAndWait()
    }
}

private final class ShutdownFlag: @unchecked Sendable {
    var value = false
}

@Suite("Connection pool", .serialized, .timeLimit(.minutes(10)), .heavy)
struct ConnectionPoolTests {
    // The time limit only catches a hang: it also counts the wait for a heavy-test slot, which a
    // full parallel run can make minutes long (the 100,000-token cluster test holds three).

    private func configuration(port: Int, connections: Int) -> HTTP2PoolConfiguration {
        HTTP2PoolConfiguration(host: "127.0.0.1", port: port, connectionCount: connections,
                               backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(400)),
                               maxRetriesPerRequest: 3, connectTimeout: .seconds(3))
    }

    @Test func requestsSpreadOverConnectionsByLoad() async throws {
        let server = try ServerProcess.nghttpd()
        let pool = try TestPool(configuration(port: server.port, connections: 4))
        defer { pool.close() }
        try await pool.waitUntilReady(4)
        let requests = TestRequests.posts(400, port: server.port)

        let outcome = try await sendAll(requests, via: pool.pool, on: pool.loop)

        for (index, result) in outcome.results.enumerated() { #expect(try result.get().body == requests[index].body) }
        #expect(outcome.duplicateCompletions == 0)
        let stats = try pool.stats()
        #expect(stats.connections.map(\.completed) == [100, 100, 100, 100], "each new request goes to the least-loaded connection")
        #expect(stats.connectionAttempts == 4)
    }

    @Test func goawayRequestsAreRetriedOnAFreshConnection() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.goawayAfter = 5
        behaviour.responseDelay = .milliseconds(30)
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let pool = try TestPool(configuration(port: server.port, connections: 1))
        defer { pool.close() }
        try await pool.waitUntilReady(1)
        let requests = TestRequests.posts(20, port: server.port)

        let outcome = try await sendAll(requests, via: pool.pool, on: pool.loop)

        for (index, result) in outcome.results.enumerated() { #expect(try result.get().body == requests[index].body) }
        let stats = server.stats()
        #expect(stats.connections == 2)
        #expect(stats.requestsPerConnection == [5, 15], "the 15 unprocessed requests went to the replacement connection")
    }

    @Test func refusedRequestsAreRetriedByThePool() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.refuseFirst = 4
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let pool = try TestPool(configuration(port: server.port, connections: 2))
        defer { pool.close() }
        try await pool.waitUntilReady(2)

        let outcome = try await sendAll(TestRequests.posts(10, port: server.port), via: pool.pool, on: pool.loop)

        #expect(outcome.successes.count == 10)
        #expect(server.stats().requests == 14)
    }

    /// A request the pool held (here: refused, handed back and sent again) is updated before it
    /// goes out again, so that what its sender stamped in it (APNs's provider token) is current;
    /// requests sent at once on a ready connection are not touched.
    @Test func requestsThePoolHeldAreUpdatedBeforeTheyGoOutAgain() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.refuseFirst = 2
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let marker = Array("held again ".utf8)
        let pool = try TestPool(configuration(port: server.port, connections: 1)) { $0.body = marker + $0.body }
        defer { pool.close() }
        try await pool.waitUntilReady(1)
        let requests = TestRequests.posts(6, port: server.port)

        let outcome = try await sendAll(requests, via: pool.pool, on: pool.loop)

        let bodies = try outcome.results.map { try $0.get().body }
        #expect(bodies.prefix(2) == requests.prefix(2).map { marker + $0.body }[...], "the two refused ones, sent again")
        #expect(bodies.suffix(4) == requests.suffix(4).map(\.body)[...], "sent once, at once")
        #expect(server.stats().requests == 8)
    }

    @Test func killedServerIsReconnectedWithBackoffAndRequestsSucceedAfterRestart() async throws {
        let port = try LoopbackSocket.freePort()
        var server = try ServerProcess.nghttpd(port: port)
        var configuration = configuration(port: port, connections: 2)
        configuration.maxRetriesPerRequest = 100
        let pool = try TestPool(configuration)
        defer { pool.close() }
        try await pool.waitUntilReady(2)
        #expect(try await sendAll(TestRequests.posts(20, port: port), via: pool.pool, on: pool.loop).successes.count == 20)

        let killedAt = ContinuousClock.now
        server.kill()
        try await waitUntil(on: pool.loop, "connections lost") { [pool = pool.pool] in pool.stats.readyConnections == 0 }
        async let waiting = sendAll(TestRequests.posts(20, port: port), via: pool.pool, on: pool.loop)
        try await Task.sleep(for: .seconds(1))
        let attemptsWhileDown = try pool.stats().connectionAttempts
        // Read after the count, so the attempts counted all fell within it.
        let downFor = ContinuousClock.now - killedAt
        server = try ServerProcess.nghttpd(port: port)

        let outcome = try await waiting
        #expect(outcome.successes.count == 20, "requests waited for the server to return: \(outcome.failures)")
        try await pool.waitUntilReady(2)
        // Two first connections, then each slot's reconnects spaced by at least the back-off's
        // shortest delays: a handful over the outage, not a storm. The bound follows the time the
        // server was down, which a loaded host stretches well past the second slept.
        let mostPerSlot = Self.mostReconnects(within: downFor, backoff: configuration.backoff)
        #expect(attemptsWhileDown <= 2 + 2 * mostPerSlot, "\(attemptsWhileDown) attempts in \(downFor)")
        _ = server
    }

    /// The most reconnects one slot can make within `window`: the n-th comes no sooner than the
    /// sum of the first n delays, each at its jitter's low end.
    private static func mostReconnects(within window: Duration, backoff: Backoff) -> Int {
        var elapsed = 0.0
        var reconnects = 0
        while true {
            let base = min(backoff.initial.inSeconds * Foundation.pow(backoff.multiplier, Double(reconnects)), backoff.maximum.inSeconds)
            elapsed += base * (1 - backoff.jitter)
            if elapsed > window.inSeconds { return reconnects }
            reconnects += 1
        }
    }

    @Test func unreachableServerFailsRequestsAfterBoundedAttempts() async throws {
        let port = try LoopbackSocket.freePort()
        var configuration = configuration(port: port, connections: 2)
        configuration.maxQueuedRequests = 5
        configuration.backoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(100))
        let pool = try TestPool(configuration)
        defer { pool.close() }

        let outcome = try await sendAll(TestRequests.posts(8, port: port), via: pool.pool, on: pool.loop, timeout: .seconds(20))

        let queueFull = outcome.failures.filter { if case .queueFull = $0 { true } else { false } }
        let refused = outcome.failures.filter {
            if case .socket(let reason) = $0.transportError { reason.contains("refused") } else { false }
        }
        #expect(queueFull.count == 3, "the pool queue holds 5 requests")
        #expect(refused.count == 5, "waiting requests fail with the connection error: \(outcome.failures)")
        // Never sent, and said so: callers counting delivery attempts do not count these.
        #expect(outcome.failures.allSatisfy { failure in
            if case .transport = failure { false } else { failure.isUnprocessed }
        }, "\(outcome.failures)")
    }

    @Test func unansweredRequestsTimeOutAndTheConnectionStaysUsable() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        behaviour.responseDelay = .seconds(3)
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        var settings = configuration(port: server.port, connections: 1)
        settings.responseTimeout = .milliseconds(200)
        let pool = try TestPool(settings)
        defer { pool.close() }
        try await pool.waitUntilReady(1)

        let started = ContinuousClock.now
        let outcome = try await sendAll(TestRequests.posts(5, port: server.port), via: pool.pool, on: pool.loop)
        #expect(ContinuousClock.now - started < .seconds(2), "the requests waited for the server instead of timing out")
        #expect(outcome.failures.count == 5)
        for failure in outcome.failures {
            if case .timedOut(let after) = failure { #expect(after == .milliseconds(200)) } else { Issue.record("expected .timedOut, got \(failure)") }
        }
        let stats = try await pool.loop.submit { [pool = pool.pool] in pool.stats }
        #expect(stats.readyConnections == 1, "a timed-out stream must not cost the connection")
        #expect(stats.connections.first?.inFlight == 0)
        #expect(stats.connectionAttempts == 1)
    }

    @Test func shutdownFinishesInFlightRequestsAndRefusesNewOnes() async throws {
        var behaviour = TestHTTP2Server.Behaviour()
        // Long enough for the poll below to see all ten in flight on a loaded machine (with
        // 200 ms, a full parallel run once saw them answered before it looked).
        behaviour.responseDelay = .seconds(3)
        let server = try TestHTTP2Server(behaviour)
        defer { server.stop() }
        let pool = try TestPool(configuration(port: server.port, connections: 2))
        defer { pool.close() }
        try await pool.waitUntilReady(2)

        async let inFlight = sendAll(TestRequests.posts(10, port: server.port), via: pool.pool, on: pool.loop)
        try await waitUntil(on: pool.loop, "requests in flight") { [pool = pool.pool] in
            pool.stats.connections.map(\.inFlight).reduce(0, +) == 10
        }
        try await pool.shutdown()
        let late = try await sendAll(TestRequests.posts(1, port: server.port), via: pool.pool, on: pool.loop)

        #expect(try await inFlight.successes.count == 10)
        if case .shutdown = late.failures.first {} else { Issue.record("expected .shutdown, got \(late.results)") }
        // The server reads each GOAWAY on its own thread, maybe after the client has closed
        // (a full parallel run once read the count before it had).
        try await eventually("both connections' GOAWAY read by the server", timeout: .seconds(10)) { server.stats().goawaysReceived == 2 }
        #expect(try pool.stats().connections.isEmpty)
    }

    @Test func shutdownFailsRequestsWaitingForAConnection() async throws {
        let port = try LoopbackSocket.freePort()
        var configuration = configuration(port: port, connections: 1)
        configuration.maxRetriesPerRequest = 100
        let pool = try TestPool(configuration)
        defer { pool.close() }

        async let waiting = sendAll(TestRequests.posts(3, port: port), via: pool.pool, on: pool.loop)
        try await waitUntil(on: pool.loop, "requests waiting") { [pool = pool.pool] in pool.stats.waiting == 3 }
        try await pool.shutdown()

        let outcome = try await waiting
        #expect(outcome.failures.count == 3)
        #expect(outcome.failures.allSatisfy { if case .shutdown = $0 { true } else { false } })
    }
}
