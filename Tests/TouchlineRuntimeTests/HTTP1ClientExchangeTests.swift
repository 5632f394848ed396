import Foundation
import Synchronization
import Testing
import TestSlots
@testable import TouchlineRuntime

/// The webhook client's one exchange against a scripted loopback server: the request goes out
/// byte for byte, the status is read from the head however the answer is framed or split, and
/// every abuse (a malformed or endless head, silence, a close mid-head) is a failure, not a hang.
@Suite(.heavy) struct HTTP1ClientExchangeTests {
    static let request = Array("POST /hook HTTP/1.1\r\nHost: r\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello".utf8)

    /// Runs one exchange on a fresh loop and returns its outcome (waits for the completion,
    /// which the exchange's own deadline bounds).
    static func exchange(port: Int, timeout: Duration = .seconds(5)) async -> HTTP1ClientExchange.Outcome {
        let loop = EventLoop.start(name: "exchange-test")
        defer { loop.stopAndWait() }
        return await withCheckedContinuation { continuation in
            loop.execute {
                HTTP1ClientExchange.start(loop: loop, tls: nil, host: "127.0.0.1", port: port, request: request, timeout: timeout) {
                    continuation.resume(returning: $0)
                }
            }
        }
    }

    /// Answers `chunks` (each sent on its own, a short pause between) once the request arrived.
    static func answering(_ chunks: [[UInt8]], thenHold: Bool = false) async throws -> (HTTP1ClientExchange.Outcome, [UInt8]) {
        let server = try ScriptedServer(chunks: chunks, holdOpen: thenHold)
        defer { server.stop() }
        let outcome = await exchange(port: server.port)
        return (outcome, server.received)
    }

    @Test func theRequestIsSentWholeAndAFramedAnswerGivesItsStatus() async throws {
        let (outcome, received) = try await Self.answering([Array("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n".utf8)])
        #expect(outcome == .status(204))
        #expect(received == Self.request)
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "HTTP/1.0 503 Service Unavailable\r\n\r\n",
        "HTTP/1.1 404\r\nServer: x\r\n\r\nno length, closed",
    ])
    func theBodyIsNeverNeededChunkedOrWithoutALength(answer: String) async throws {
        let (outcome, _) = try await Self.answering([Array(answer.utf8)])
        let expected = Int(answer.dropFirst("HTTP/1.1 ".count).prefix(3))!
        #expect(outcome == .status(expected))
    }

    @Test func aHeadSplitAcrossReadsEvenInsideItsTerminatorIsFound() async throws {
        let head = Array("HTTP/1.1 202 Accepted\r\nX-Long: \(String(repeating: "a", count: 3000))\r\n\r\n".utf8)
        // Split just inside the blank line, then a byte at a time for the rest.
        let split = head.count - 3
        let (outcome, _) = try await Self.answering([Array(head[..<split])] + head[split...].map { [$0] }, thenHold: true)
        #expect(outcome == .status(202))
    }

    @Test func anInterimAnswerIsSkippedForTheFinalOne() async throws {
        let (outcome, _) = try await Self.answering([Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n\r\n".utf8)], thenHold: true)
        #expect(outcome == .status(201))
    }

    @Test(arguments: ["HTTP/2 200 OK\r\n\r\n", "HTP/1.1 200 OK\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n",
                      "HTTP/1.1 700 Nope\r\n\r\n", "HTTP/1.1\r\n\r\n", "garbage\r\n\r\n"])
    func aMalformedStatusLineIsAFailure(answer: String) async throws {
        let (outcome, _) = try await Self.answering([Array(answer.utf8)], thenHold: true)
        #expect(outcome == .failed("the answer does not start with an HTTP/1.x status line"))
    }

    @Test func aHeadLongerThan16KiBIsAFailureWithoutReadingOn() async throws {
        let endless = Array("HTTP/1.1 200 OK\r\nX-Padding: ".utf8) + [UInt8](repeating: 97, count: 40 * 1024)
        let (outcome, _) = try await Self.answering([endless], thenHold: true)
        #expect(outcome == .failed("the answer's head is larger than 16384 bytes"))
        // Just under the bound is still read.
        let large = Array("HTTP/1.1 200 OK\r\nX-Padding: ".utf8) + [UInt8](repeating: 97, count: 16 * 1024 - 50) + Array("\r\n\r\n".utf8)
        let (fits, _) = try await Self.answering([large], thenHold: true)
        #expect(fits == .status(200))
    }

    @Test func aCloseBeforeTheHeadEndsIsAFailure() async throws {
        let (outcome, _) = try await Self.answering([Array("HTTP/1.1 200 OK\r\nContent-Le".utf8)])
        #expect(outcome == .failed("the connection closed before the answer's head ended"))
    }

    @Test func aSilentReceiverFailsAtTheDeadline() async throws {
        let server = try ScriptedServer(chunks: [], holdOpen: true)
        defer { server.stop() }
        let outcome = await Self.exchange(port: server.port, timeout: .milliseconds(300))
        #expect(outcome == .failed("no answer within 0.3 s"))
        #expect(server.received == Self.request, "the request went out; only the answer never came")
    }

    @Test func aRefusedConnectionIsAFailure() async throws {
        let server = try ScriptedServer(chunks: [], holdOpen: false)
        let port = server.port
        server.stop()
        guard case .failed(let reason) = await Self.exchange(port: port) else { Issue.record("no failure"); return }
        #expect(reason.contains("connection failed"), "\(reason)")
    }

    @Test func theParserNeedsTheWholeHead() {
        #expect(HTTP1ClientExchange.status(inHead: Array("HTTP/1.1 200 OK\r\n".utf8)) == nil)
        #expect(HTTP1ClientExchange.status(inHead: Array("HTTP/1.1 200 OK\r\n\r".utf8)) == nil)
        #expect(HTTP1ClientExchange.status(inHead: Array("HTTP/1.1 299 x\r\n\r\n".utf8)) == .status(299))
        #expect(HTTP1ClientExchange.headEnd(in: Array("ab\r\n\r\n".utf8), from: 3) == nil, "the search starts where it is told")
        #expect(HTTP1ClientExchange.headEnd(in: Array("ab\r\n\r\n".utf8), from: 2) == 2)
    }
}

/// A loopback server on a real thread for one connection: reads the request (its head and
/// `Content-Length` body), then writes each chunk with a short pause between, then closes, or
/// holds the connection open until ``stop()``.
final class ScriptedServer: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    var received: [UInt8] { lock.withLock { bytes } }

    init(chunks: [[UInt8]], holdOpen: Bool) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 4) == 0 else { throw TransportError.socket("cannot listen") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        let listening = fd
        Thread { [self] in
            defer { done.signal() }
            let client = accept(listening, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !stopped.load(ordering: .relaxed), !requestComplete {
                let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                if count == 0 { return }
                if count > 0 { lock.withLock { bytes += buffer[..<count] } }
            }
            for chunk in chunks {
                _ = chunk.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                usleep(2_000)
            }
            while holdOpen, !stopped.load(ordering: .relaxed) {
                // Read on (and drop) until the client closes or the test stops.
                if buffer.withUnsafeMutableBytes({ recv(client, $0.baseAddress, $0.count, 0) }) == 0 { return }
            }
        }.start()
    }

    /// The request's head and its `Content-Length` body have arrived.
    private var requestComplete: Bool {
        let bytes = received
        guard let end = HTTP1ClientExchange.headEnd(in: bytes, from: 0) else { return false }
        let head = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
        let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        return bytes.count >= end + 4 + length
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        done.wait()
    }
}
