import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineRuntime

/// Slow and silent clients are cut off at their deadline, with a JSON 408 when a request was
/// under way; a streamed answer's client that stops reading is dropped at the write deadline.
@Suite(.heavy) struct HTTPServerDeadlineTests {
    private static func answering(_ configuration: HTTPServerConfiguration, handled: Counter? = nil) throws -> ServerFixture {
        try ServerFixture(configuration: configuration) { request in
            handled?.add()
            request.respond(.json(status: 200, ["bytes": .integer(Int64(request.body.count))]))
        }
    }

    @Test func aHeadTrickledAByteAtATimeIsCutOffAtTheHeadDeadline() throws {
        let handled = Counter()
        let fixture = try Self.answering(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(headTimeout: .milliseconds(300))), handled: handled)
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        let head = Array("GET /slow HTTP/1.1\r\nHost: gw\r\nX-Padding: \(String(repeating: "p", count: 200))\r\n\r\n".utf8)
        let trickling = Atomic<Bool>(true)
        let started = ContinuousClock.now
        let sender = Thread {
            for byte in head where trickling.load(ordering: .relaxed) {
                guard (try? client.send([byte])) != nil else { return }
                usleep(20_000)
            }
        }
        sender.start()
        defer { trickling.store(false, ordering: .relaxed) }
        let response = try #require(try client.readResponse())
        #expect(response.status == 408)
        #expect(response.json["error"] as? String == "request_timeout")
        #expect(response.json["message"] as? String == "the request head was not complete within 0.3 s")
        #expect(response.headers["connection"] == "close")
        #expect(client.isClosedByServer())
        // Cut off well before the whole head (about 4 s at this pace) could have arrived.
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(handled.count == 0)
    }

    @Test func aConnectionThatNeverSendsAByteIsClosedAtTheIdleDeadlineWithoutAnAnswer() throws {
        let fixture = try Self.answering(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(idleTimeout: .milliseconds(200))))
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port, receiveTimeoutSeconds: 5)
        let (bytes, reset) = client.readUntilClosed()
        #expect(bytes.isEmpty && !reset)
    }

    /// A connection that says nothing holds its slot for the first-request deadline, not for the
    /// idle timeout (60 s by default), so re-opening silent connections cannot keep the port full.
    @Test func aConnectionThatSendsNothingIsClosedAtTheFirstRequestDeadline() throws {
        let fixture = try Self.answering(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(
            firstRequestTimeout: .milliseconds(300), idleTimeout: .seconds(3600))))
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port, receiveTimeoutSeconds: 20)
        // Closed without an answer (no bytes before the end), long before the read would time out.
        #expect(client.isClosedByServer())
        #expect(fixture.figures.firstRequestTimeouts == 1)
        #expect(fixture.openConnections == 0)
    }

    @Test func aFirstHeadBegunButNotCompleteAtTheFirstRequestDeadlineGets408() throws {
        let fixture = try Self.answering(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(
            firstRequestTimeout: .milliseconds(300), headTimeout: .seconds(3600), idleTimeout: .seconds(3600))))
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port, receiveTimeoutSeconds: 20)
        try client.send("GET /slow HTTP/1.1\r\nHost: gw\r\n")
        let response = try #require(try client.readResponse())
        #expect(response.status == 408)
        #expect(response.json["error"] as? String == "request_timeout")
        #expect(response.json["message"] as? String == "the request head was not complete within 0.3 s of connecting")
        #expect(client.isClosedByServer())
    }

    /// The deadline is for the first request only: between requests the idle timeout rules.
    @Test func theFirstRequestDeadlineEndsWithTheFirstHead() throws {
        let fixture = try Self.answering(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(
            firstRequestTimeout: .milliseconds(200), idleTimeout: .seconds(3600))))
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port, receiveTimeoutSeconds: 10)
        #expect(try client.exchange("GET", "/one").status == 200)
        usleep(700_000)
        #expect(try client.exchange("GET", "/two").status == 200)
        #expect(fixture.figures.firstRequestTimeouts == 0)
    }

    @Test func anIdleKeepAliveConnectionIsClosedAfterItsLastAnswer() throws {
        let fixture = try Self.answering(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(idleTimeout: .milliseconds(600))))
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port, receiveTimeoutSeconds: 5)
        #expect(try client.exchange("GET", "/one").status == 200)
        usleep(150_000)
        // Each answer starts the idle time again.
        #expect(try client.exchange("GET", "/two").status == 200)
        #expect(client.isClosedByServer())
    }

    /// Requests answered on the spot (as the gateway answers reads, and every write while its
    /// store is failing) each start the idle time again, like answers that come later: a busy
    /// connection stays open for as long as it is busy. The idle timer used to keep the deadline
    /// it had before such a request, and closed a busy connection one idle timeout after it was
    /// first idle, under the client's next request (found by `touchline-load soak`).
    @Test func aConnectionKeptBusyWithAnswersOnTheSpotStaysOpen() throws {
        let fixture = try Self.answering(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(idleTimeout: .milliseconds(300))))
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port, receiveTimeoutSeconds: 5)
        var lastAnswer = ContinuousClock.now
        for number in 1...10 {
            usleep(100_000)
            #expect(try client.exchange("GET", "/busy").status == 200, "request \(number), \(number * 100) ms into the connection")
            lastAnswer = ContinuousClock.now
        }
        #expect(client.isClosedByServer())
        #expect(ContinuousClock.now - lastAnswer >= .milliseconds(250), "closed before an idle timeout had passed since the last answer")
    }

    @Test func aBodyThatStopsArrivingIsCutOffAtTheBodyDeadline() throws {
        let handled = Counter()
        let fixture = try Self.answering(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(bodyTimeout: .milliseconds(300))), handled: handled)
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send("POST /upload HTTP/1.1\r\nHost: gw\r\nContent-Length: 100\r\n\r\n0123456789")
        let response = try #require(try client.readResponse())
        #expect(response.status == 408)
        #expect(response.json["message"] as? String == "the request body was not complete within 0.3 s")
        #expect(client.isClosedByServer())
        #expect(handled.count == 0)
        #expect(fixture.bufferedBodyBytes == 0)
    }

    @Test func aStreamClientThatStopsReadingIsDroppedAtTheWriteDeadline() async throws {
        let closes = Atomic<Int>(0)
        let streams = Mutex<[HTTPResponseStream]>([])
        let fixture = try ServerFixture(configuration: HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(writeTimeout: .milliseconds(300)))) { request in
            guard let stream = request.startStream(headers: [("Content-Type", "text/event-stream")], onClose: {
                closes.add(1, ordering: .relaxed)
            }) else { return }
            streams.withLock { $0.append(stream) }
        }
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send(RawHTTPClient.request("GET", "/stream"))
        while streams.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
        let stream = try #require(streams.withLock { $0.first })
        // Write until the socket buffers are full and the rest waits in the server.
        let chunk = [UInt8](repeating: UInt8(ascii: "d"), count: 256 << 10)
        var buffered = 0
        for _ in 0..<200 where buffered == 0 {
            buffered = try fixture.loop.sync { stream.write(chunk) ? stream.bufferedBytes : -1 }
        }
        #expect(buffered > 0)
        let deadline = ContinuousClock.now + .seconds(30)
        while closes.load(ordering: .relaxed) == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(closes.load(ordering: .relaxed) == 1)
        #expect(try fixture.loop.sync { stream.isOpen } == false)
        #expect(fixture.inFlightRequests == 0)
    }
}
