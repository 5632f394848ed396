import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineRuntime

/// Streamed responses (the transport of Server-Sent Events) over a real server and socket.
@Suite(.heavy) struct HTTPResponseStreamTests {
    /// The streams the handler opened and how many of them reported their close.
    private final class Streams: Sendable {
        private let open = Mutex<[HTTPResponseStream]>([])
        let closes = Atomic<Int>(0)

        func add(_ stream: HTTPResponseStream) { open.withLock { $0.append(stream) } }
        var first: HTTPResponseStream? { open.withLock { $0.first } }
    }

    /// A server whose `/stream` route opens an event stream and sends a first event at once;
    /// `/plain` answers normally.
    private func streamingServer(_ streams: Streams, configuration: HTTPServerConfiguration = HTTPServerConfiguration()) throws
        -> ServerFixture {
        try ServerFixture(configuration: configuration) { request in
            guard request.path == "/stream" else {
                request.respond(.json(status: 200, ["plain": true]))
                return
            }
            guard let stream = request.startStream(headers: [("Content-Type", "text/event-stream")], onClose: {
                streams.closes.add(1, ordering: .sequentiallyConsistent)
            }) else { return }
            streams.add(stream)
            stream.write(Array("data: first\n\n".utf8))
        }
    }

    private func write(_ text: String, on fixture: ServerFixture, _ streams: Streams) throws -> Bool {
        let stream = try #require(streams.first)
        return try fixture.loop.sync { stream.write(Array(text.utf8)) }
    }

    private func text(_ bytes: [UInt8]?) -> String { bytes.map { String(decoding: $0, as: UTF8.self) } ?? "<closed>" }

    @Test func theHeadGoesOutAtOnceThenEachWriteAsAChunk() throws {
        let streams = Streams()
        let fixture = try streamingServer(streams)
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send(RawHTTPClient.request("GET", "/stream"))
        let head = try #require(try client.readResponse())
        #expect(head.status == 200)
        #expect(head.headers["content-type"] == "text/event-stream")
        #expect(head.headers["transfer-encoding"] == "chunked")
        #expect(head.headers["content-length"] == nil)
        // Chunk framing: size in hex, CRLF, the bytes, CRLF.
        #expect(text(try client.read(through: Array("first\n\n\r\n".utf8))) == "d\r\ndata: first\n\n\r\n")
        #expect(try write("data: second\n\n", on: fixture, streams))
        #expect(text(try client.read(through: Array("second\n\n\r\n".utf8))) == "e\r\ndata: second\n\n\r\n")
        #expect(fixture.inFlightRequests == 1)
    }

    @Test func finishSendsTheLastChunkAndTheConnectionServesTheNextRequest() throws {
        let streams = Streams()
        let fixture = try streamingServer(streams)
        defer { fixture.stop() }
        let client = try openedStream(on: fixture.port)
        let stream = try #require(streams.first)
        try fixture.loop.sync { stream.finish() }
        #expect(text(try client.read(through: Array("0\r\n\r\n".utf8))) == "0\r\n\r\n")
        #expect(try fixture.loop.sync { stream.isOpen } == false)
        #expect(try write("late", on: fixture, streams) == false)
        #expect(try client.exchange("GET", "/plain").text == #"{"plain":true}"#)
        #expect(streams.closes.load(ordering: .sequentiallyConsistent) == 0, "finish() is not reported as a close")
        #expect(fixture.inFlightRequests == 0)
    }

    @Test func aClientLeavingClosesTheStreamAndIsReported() async throws {
        let streams = Streams()
        let fixture = try streamingServer(streams)
        defer { fixture.stop() }
        let client = try openedStream(on: fixture.port)
        client.closeNow()
        let deadline = ContinuousClock.now + .seconds(30)
        while streams.closes.load(ordering: .sequentiallyConsistent) == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(streams.closes.load(ordering: .sequentiallyConsistent) == 1)
        #expect(try write("after the client left", on: fixture, streams) == false)
        #expect(fixture.inFlightRequests == 0)
    }

    @Test func aQuietClientIsNotDroppedByTheReadTimeout() async throws {
        let streams = Streams()
        let fixture = try streamingServer(streams, configuration: HTTPServerConfiguration(connectionLimits: .init(headTimeout: .milliseconds(200), bodyTimeout: .milliseconds(200), idleTimeout: .milliseconds(200))))
        defer { fixture.stop() }
        let client = try openedStream(on: fixture.port)
        // Several read timeouts long without a byte from the client.
        try await Task.sleep(for: .seconds(1))
        #expect(try write("data: still here\n\n", on: fixture, streams))
        #expect(text(try client.read(through: Array("here\n\n\r\n".utf8))).hasSuffix("data: still here\n\n\r\n"))
        #expect(streams.closes.load(ordering: .sequentiallyConsistent) == 0)
    }

    @Test func shutdownEndsOpenStreamsAndClosesTheirConnections() throws {
        let streams = Streams()
        let fixture = try streamingServer(streams)
        let client = try RawHTTPClient(port: fixture.port)
        try client.send(RawHTTPClient.request("GET", "/stream"))
        let head = try #require(try client.readResponse())
        #expect(head.status == 200)
        _ = try #require(try client.read(through: Array("first\n\n\r\n".utf8)))
        // The grace period is long: the stream must not hold the shutdown for it.
        let done = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        fixture.loop.execute { [server = fixture.server] in server.shutdown(gracePeriod: .seconds(30)) { done.signal() } }
        #expect(text(try client.read(through: Array("0\r\n\r\n".utf8))) == "0\r\n\r\n")
        #expect(client.isClosedByServer())
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(streams.closes.load(ordering: .sequentiallyConsistent) == 1)
        fixture.loop.stopAndWait()
    }

    /// `whenDrained` runs at once when nothing waits, and otherwise only once the client has
    /// taken everything written: what lets a writer hold one piece at a time.
    @Test func whenDrainedWaitsForTheClientToTakeTheWrite() async throws {
        let streams = Streams()
        let fixture = try streamingServer(streams)
        defer { fixture.stop() }
        let client = try openedStream(on: fixture.port)
        let stream = try #require(streams.first)
        let drained = Atomic<Int>(0)
        try fixture.loop.sync { stream.whenDrained { drained.add(1, ordering: .sequentiallyConsistent) } }
        #expect(drained.load(ordering: .sequentiallyConsistent) == 1, "nothing waited: at once")
        // More than loopback's socket buffers take while the client reads nothing.
        let piece = [UInt8](repeating: UInt8(ascii: "x"), count: 32 << 20)
        let waiting = try fixture.loop.sync { () -> Int in
            stream.write(piece)
            stream.whenDrained { drained.add(1, ordering: .sequentiallyConsistent) }
            return stream.bufferedBytes
        }
        #expect(waiting > 0 && drained.load(ordering: .sequentiallyConsistent) == 1, "\(waiting) bytes wait for the client")
        let framing = String(piece.count, radix: 16).utf8.count + 4
        #expect(try client.discard(piece.count + framing), "the client takes the whole piece")
        let deadline = ContinuousClock.now + .seconds(30)
        while drained.load(ordering: .sequentiallyConsistent) < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(drained.load(ordering: .sequentiallyConsistent) == 2)
        #expect(try fixture.loop.sync { stream.bufferedBytes } == 0)
    }

    /// `abort` ends a stream as a failure: the connection closes without the last chunk (the
    /// client sees a cut transfer), and `onClose` runs.
    @Test func abortClosesTheConnectionWithoutTheLastChunk() throws {
        let streams = Streams()
        let fixture = try streamingServer(streams)
        defer { fixture.stop() }
        let client = try openedStream(on: fixture.port)
        let stream = try #require(streams.first)
        try fixture.loop.sync { stream.abort() }
        let rest = client.readUntilClosed()
        #expect(!text(rest.bytes).contains("0\r\n\r\n"), "\(text(rest.bytes))")
        #expect(streams.closes.load(ordering: .sequentiallyConsistent) == 1)
        #expect(fixture.inFlightRequests == 0)
    }

    /// A stream that is only whole when finished is cut, not ended, by a shutdown.
    @Test func shutdownCutsAStreamThatIsOnlyWholeWhenFinished() throws {
        let streams = Streams()
        let fixture = try streamingServer(streams)
        let client = try openedStream(on: fixture.port)
        let stream = try #require(streams.first)
        try fixture.loop.sync { stream.cutsWhenEnded = true }
        let done = DispatchSemaphore(value: 0)
        fixture.loop.execute { [server = fixture.server] in server.shutdown(gracePeriod: .seconds(30)) { done.signal() } }
        let rest = client.readUntilClosed()
        #expect(!text(rest.bytes).contains("0\r\n\r\n"), "no last chunk: \(text(rest.bytes))")
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(streams.closes.load(ordering: .sequentiallyConsistent) == 1)
        fixture.loop.stopAndWait()
    }

    /// A client that asked for `/stream` and has read its head and first event.
    private func openedStream(on port: Int) throws -> RawHTTPClient {
        let client = try RawHTTPClient(port: port)
        try client.send(RawHTTPClient.request("GET", "/stream"))
        _ = try #require(try client.readResponse())
        _ = try #require(try client.read(through: Array("first\n\n\r\n".utf8)))
        return client
    }
}
