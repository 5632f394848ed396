import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineRuntime

/// Framing over a real connection: a smuggled request is never executed, chunked bodies arrive
/// whole, pipelined answers keep their order, HTTP/1.0 is served and closed.
@Suite(.heavy) struct HTTPServerFramingTests {
    /// Records each request's method, path and body and answers with them, after a delay taken
    /// from `?delay=` in milliseconds (answered from another thread, through the loop).
    private final class Recorder: Sendable {
        let seen = Mutex<[String]>([])

        func fixture() throws -> ServerFixture {
            try ServerFixture { request in
                let line = "\(request.method.rawValue) \(request.path) \(String(decoding: request.body, as: UTF8.self))"
                self.seen.withLock { $0.append(line) }
                let delay = Int(request.target.queryValue("delay") ?? "0") ?? 0
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) {
                    request.respond(.json(status: 200, ["request": .string(line)]))
                }
            }
        }
    }

    @Test func aRequestSmuggledInABodyIsNeverExecuted() throws {
        let recorder = Recorder()
        let fixture = try recorder.fixture()
        defer { fixture.stop() }
        let hidden = "GET /admin HTTP/1.1\r\nHost: gw\r\n\r\n"
        let attacks = [
            "POST /a HTTP/1.1\r\nHost: gw\r\nContent-Length: 0\r\nContent-Length: \(hidden.utf8.count)\r\n\r\n\(hidden)",
            "POST /a HTTP/1.1\r\nHost: gw\r\nContent-Length : \(hidden.utf8.count)\r\n\r\n\(hidden)",
            "POST /a HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n\(hidden)",
        ]
        for attack in attacks {
            let client = try RawHTTPClient(port: fixture.port)
            try client.send(attack)
            let response = try #require(try client.readResponse())
            #expect(response.status == 400, "\(attack.debugDescription)")
            #expect(response.headers["connection"] == "close")
            #expect(client.isClosedByServer())
        }
        #expect(recorder.seen.withLock { $0 }.isEmpty)
    }

    @Test func aChunkedBodyReachesTheHandlerWhole() throws {
        let recorder = Recorder()
        let fixture = try recorder.fixture()
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send("POST /chunked HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n")
        #expect(try client.readResponse()?.json["request"] as? String == "POST /chunked Wikipedia")
        // Chunk-size garbage is a framing error (400), not a size problem.
        try client.send("POST /chunked HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        let garbage = try #require(try client.readResponse())
        #expect(garbage.status == 400 && garbage.json["error"] as? String == "invalid_chunk_size")
    }

    @Test func pipelinedRequestsAnsweredOutOfOrderReachTheClientInOrder() throws {
        let recorder = Recorder()
        let fixture = try recorder.fixture()
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        // The first answers take longest.
        let requests = (0..<6).flatMap { RawHTTPClient.request("POST", "/p\($0)?delay=\((6 - $0) * 15)", body: Array("b\($0)".utf8)) }
        try client.send(requests)
        for index in 0..<6 {
            let response = try #require(try client.readResponse())
            #expect(response.json["request"] as? String == "POST /p\(index) b\(index)")
        }
        #expect(recorder.seen.withLock { $0.count } == 6)
    }

    @Test func anHTTP10ClientIsAnsweredAndTheConnectionClosed() throws {
        let recorder = Recorder()
        let fixture = try recorder.fixture()
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send("GET /old HTTP/1.0\r\n\r\n")
        let response = try #require(try client.readResponse())
        #expect(response.status == 200 && response.headers["connection"] == "close")
        #expect(client.isClosedByServer())

        let keeping = try RawHTTPClient(port: fixture.port)
        try keeping.send("GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(try keeping.readResponse()?.headers["connection"] == "keep-alive")
        try keeping.send("GET /again HTTP/1.0\r\n\r\n")
        #expect(try keeping.readResponse()?.status == 200)
    }

    @Test func aMissingHostIsRefusedAndNothingReachesTheHandler() throws {
        let recorder = Recorder()
        let fixture = try recorder.fixture()
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send("GET /nohost HTTP/1.1\r\nAccept: */*\r\n\r\n")
        let response = try #require(try client.readResponse())
        #expect(response.status == 400 && response.json["error"] as? String == "missing_host")
        #expect(recorder.seen.withLock { $0 }.isEmpty)
    }

    @Test func theServerOwnsTheResponseFramingAndNoHeaderValueStartsAnotherHeader() throws {
        let fixture = try ServerFixture { request in
            request.respond(HTTPResponse(status: 200, headers: [("X-Echo", "a\r\nSet-Cookie: evil"), ("Content-Length", "999"),
                                                                ("Connection", "upgrade")], body: Array("ok".utf8)))
        }
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        let response = try client.exchange("GET", "/")
        #expect(response.text == "ok" && response.headers["content-length"] == "2")
        #expect(response.headers["set-cookie"] == nil && response.headers["x-echo"] == "a  Set-Cookie: evil")
        #expect(response.headers["connection"] == nil && response.headers["date"]?.hasSuffix(" GMT") == true)
        #expect(try client.exchange("GET", "/").status == 200)
    }

    @Test func duringShutdownANewRequestOnAnOpenConnectionGets503() throws {
        let parked = Mutex<[HTTPRequest]>([])
        let fixture = try ServerFixture { request in
            if request.path == "/park" { parked.withLock { $0.append(request) } } else { request.respond(HTTPResponse(status: 204)) }
        }
        let busy = try RawHTTPClient(port: fixture.port)
        try busy.send(RawHTTPClient.request("GET", "/park"))
        let idle = try RawHTTPClient(port: fixture.port)
        #expect(try idle.exchange("GET", "/quick").status == 204)
        while parked.withLock({ $0.isEmpty }) { usleep(1000) }
        let stopped = DispatchSemaphore(value: 0)
        fixture.loop.execute { fixture.server.shutdown(gracePeriod: .seconds(5)) { stopped.signal() } }
        let refused = try idle.exchange("GET", "/quick")
        #expect(refused.status == 503 && refused.json["error"] as? String == "shutting_down")
        #expect(refused.headers["connection"] == "close")
        let request = parked.withLock { $0[0] }
        fixture.loop.execute { request.respond(HTTPResponse(status: 200)) }
        #expect(try busy.readResponse()?.status == 200)
        #expect(stopped.wait(timeout: .now() + 2) == .success)
        fixture.loop.stopAndWait()
    }
}
