import ChildProcesses
import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime

/// The server tests' authorizer: `.bearer` routes need `Authorization: Bearer <key>` and hand
/// the key to the handler; `.open` routes take anyone.
private struct BearerAuthorizer: HTTPRouteAuthorizer {
    enum Scope: Sendable { case open, bearer }

    func authorize(_ request: HTTPRequest, for scope: Scope, parameters: HTTPRouteParameters) throws(HTTPError) -> String? {
        scope == .bearer ? try request.bearerToken() : nil
    }
}

/// The router the server tests share: an echo of what the server parsed, behind a bearer key,
/// and routes whose handlers refuse (a thrown error, a number segment, a misdeclared parameter).
private func echoRouter() -> HTTPRouter<BearerAuthorizer> {
    var router = HTTPRouter(authorizer: BearerAuthorizer())
    router.add(.post, "/v1/channels/{id}/events", scope: .bearer) { call throws(HTTPError) in
        let request = call.request
        call.respond(.json(status: 202, [
            "id": .string(try call.parameters.string("id")),
            "key": .string(call.caller ?? ""),
            "limit": request.target.queryValue("limit").map { .string($0) } ?? .null,
            "note": request.target.queryValue("note").map { .string($0) } ?? .null,
            "trace": request.header("x-TRACE-id").map { .string($0) } ?? .null,
            "bytes": .integer(Int64(request.body.count)),
        ]))
    }
    router.add(.get, "/v1/channels/{id}", scope: .open) { call throws(HTTPError) in
        call.respond(.json(status: 200, ["id": .string(try call.parameters.string("id"))]))
    }
    router.add(.delete, "/v1/channels/{id}", scope: .open) { call throws(HTTPError) in call.respond(HTTPResponse(status: 204)) }
    router.add(.get, "/v1/items/{number}", scope: .open) { call throws(HTTPError) in
        let number = try call.parameters.value("number", as: Int64.self)
        guard number > 0 else { throw HTTPError(status: 422, code: "not_positive", message: "item numbers start at 1") }
        call.respond(.json(status: 200, ["number": .integer(number)]))
    }
    router.add(.get, "/v1/misdeclared/{x}", scope: .open) { call throws(HTTPError) in
        call.respond(.json(status: 200, ["y": .string(try call.parameters.string("y"))]))
    }
    return router
}

/// Runs curl and returns (status, body).
private func curl(_ arguments: [String]) throws -> (status: Int, body: String) {
    var lines = try ChildProcess.run("/usr/bin/curl", ["-s", "-w", "\n%{http_code}"] + arguments, errors: .null).output
        .components(separatedBy: "\n")
    let status = Int(lines.removeLast()) ?? -1
    return (status, lines.joined(separator: "\n"))
}

@Suite(.heavy) struct HTTPServerTests {
    @Test func curlReachesARouteWithParametersQueryHeadersAndBody() throws {
        let fixture = try ServerFixture(router: echoRouter())
        defer { fixture.stop() }
        let result = try curl([
            "-X", "POST", "-H", "Authorization: Bearer k-1", "-H", "X-Trace-Id: t9",
            "-H", "Content-Type: application/json", "--data-binary", #"{"seq":1}"#,
            "http://127.0.0.1:\(fixture.port)/v1/channels/match%2F7/events?limit=10&note=a+b%21",
        ])
        #expect(result.status == 202)
        #expect(result.body == #"{"id":"match/7","key":"k-1","limit":"10","note":"a b!","trace":"t9","bytes":9}"#)
    }

    @Test func unknownPathWrongMethodAndMissingKeyGetJSONErrors() throws {
        let fixture = try ServerFixture(router: echoRouter())
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)

        let notFound = try client.exchange("GET", "/v2/nothing")
        #expect(notFound.status == 404)
        #expect(notFound.headers["content-type"] == "application/json")
        #expect(notFound.json["error"] as? String == "not_found")
        #expect(notFound.json["message"] as? String == "no resource at /v2/nothing")

        let wrongMethod = try client.exchange("PUT", "/v1/channels/abc")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["allow"] == "GET, DELETE")
        #expect(wrongMethod.json["error"] as? String == "method_not_allowed")

        let noKey = try client.exchange("POST", "/v1/channels/abc/events", body: Array("{}".utf8))
        #expect(noKey.status == 401)
        #expect(noKey.headers["www-authenticate"] == "Bearer")
        #expect(noKey.json["error"] as? String == "missing_api_key")

        let basic = try client.exchange("POST", "/v1/channels/abc/events", headers: ["Authorization: Basic dTpw"], body: Array("{}".utf8))
        #expect(basic.status == 401)
        #expect(basic.json["error"] as? String == "invalid_authorization")
        #expect((basic.json["message"] as? String)?.contains("must use the Bearer scheme") == true)

        // A key sent without its scheme is never echoed back, not even in part.
        let bareKey = "k3y-0123456789abcdefghijklmnop"
        let schemeless = try client.exchange("POST", "/v1/channels/abc/events", headers: ["Authorization: \(bareKey)"], body: Array("{}".utf8))
        #expect(schemeless.status == 401)
        #expect(schemeless.json["error"] as? String == "invalid_authorization")
        #expect(!schemeless.text.contains(String(bareKey.prefix(6))), "\(schemeless.text)")
    }

    @Test func theRouterAnswersWhatHandlersThrowAndRefusesBadPathSegmentsWith400() throws {
        let fixture = try ServerFixture(router: echoRouter())
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)

        let item = try client.exchange("GET", "/v1/items/42")
        #expect(item.status == 200 && item.json["number"] as? Int == 42, "\(item.text)")
        let thrown = try client.exchange("GET", "/v1/items/0")
        #expect(thrown.status == 422 && thrown.json["error"] as? String == "not_positive", "\(thrown.text)")
        let notANumber = try client.exchange("GET", "/v1/items/abc")
        #expect(notANumber.status == 400 && notANumber.json["error"] as? String == "invalid_path", "\(notANumber.text)")
        #expect((notANumber.json["message"] as? String)?.contains("'number'") == true, "\(notANumber.text)")
        // A handler asking for a segment its pattern does not declare gets a 400, not a trap.
        let misdeclared = try client.exchange("GET", "/v1/misdeclared/1")
        #expect(misdeclared.status == 400 && misdeclared.json["error"] as? String == "invalid_path", "\(misdeclared.text)")
        // The server still serves after every refusal.
        #expect(try client.exchange("GET", "/v1/channels/abc").status == 200)
    }

    @Test func theRouteTableListsEveryRouteWithItsScope() {
        let routes = echoRouter().routes
        #expect(routes.map { "\($0.method.rawValue) \($0.pattern)" } == [
            "POST /v1/channels/{id}/events", "GET /v1/channels/{id}", "DELETE /v1/channels/{id}", "GET /v1/items/{number}",
            "GET /v1/misdeclared/{x}",
        ])
        #expect(routes.map(\.scope) == [.bearer, .open, .open, .open, .open])
    }

    @Test func keepAliveAndPipelinedRequestsAreAnsweredInOrderOnOneConnection() throws {
        let fixture = try ServerFixture(router: echoRouter())
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        for i in 0..<5 {
            let response = try client.exchange("GET", "/v1/channels/c\(i)")
            #expect(response.status == 200)
            #expect(response.text == #"{"id":"c\#(i)"}"#)
        }
        let pipelined = (0..<10).flatMap { RawHTTPClient.request("GET", "/v1/channels/p\($0)") }
        try client.send(pipelined)
        for i in 0..<10 {
            let response = try #require(try client.readResponse())
            #expect(response.text == #"{"id":"p\#(i)"}"#)
        }
    }

    @Test func bodyOverTheCapIsRefusedWith413FromItsLengthAndTheServerKeepsServing() throws {
        let fixture = try ServerFixture(configuration: HTTPServerConfiguration(maxBodySize: 1024), router: echoRouter())
        defer { fixture.stop() }
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
        let client = try RawHTTPClient(port: fixture.port)
        let refused = try client.exchange("POST", "/v1/channels/a/events", headers: ["Authorization: Bearer k"],
                                          body: Array(big.prefix(2000)))
        #expect(refused.status == 413)
        #expect(refused.headers["content-type"] == "application/json")
        #expect(refused.headers["connection"] == "close")
        #expect(refused.json["message"] as? String == "the request body is 2000 bytes; the limit is 1024 bytes")
        // The unread body stands between this request and a next one: the connection ends.
        #expect(client.isClosedByServer())

        let farOver = try RawHTTPClient(port: fixture.port)
        let cutOff = try farOver.exchange("POST", "/v1/channels/a/events", headers: ["Authorization: Bearer k"], body: big)
        #expect(cutOff.status == 413)

        let bodyFile = FileManager.default.temporaryDirectory.appendingPathComponent("http-test-\(UUID()).json")
        try Data(repeating: UInt8(ascii: "y"), count: 200_000).write(to: bodyFile)
        defer { try? FileManager.default.removeItem(at: bodyFile) }
        let viaCurl = try curl(["-H", "Authorization: Bearer k", "--data-binary", "@\(bodyFile.path)",
                                "http://127.0.0.1:\(fixture.port)/v1/channels/a/events"])
        #expect(viaCurl.status == 413)

        let fresh = try RawHTTPClient(port: fixture.port)
        let accepted = try fresh.exchange("POST", "/v1/channels/a/events", headers: ["Authorization: Bearer k"],
                                          body: [UInt8](repeating: 1, count: 1024))
        #expect(accepted.status == 202)
        #expect(accepted.json["bytes"] as? Int == 1024)
    }

    @Test func aMethodTheServerDoesNotServeGetsAJSON501() throws {
        let fixture = try ServerFixture(configuration: HTTPServerConfiguration(allowedMethods: [.get]), router: echoRouter())
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        let response = try client.exchange("DELETE", "/v1/channels/x")
        #expect(response.status == 501)
        #expect(response.json["message"] as? String == "the server does not implement DELETE")
        #expect(try client.exchange("GET", "/v1/channels/x").status == 200)
    }

    @Test func optionsListsAPathsMethodsAndTraceAndQueryAreNotAllowed() throws {
        let fixture = try ServerFixture(router: echoRouter())
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        let options = try client.exchange("OPTIONS", "/v1/channels/x")
        #expect(options.status == 204)
        #expect(options.headers["allow"] == "GET, DELETE, OPTIONS")
        #expect(options.body.isEmpty)
        // Without a key too, and only for paths that exist.
        #expect(try client.exchange("OPTIONS", "/v1/channels/x/events").headers["allow"] == "POST, OPTIONS")
        #expect(try client.exchange("OPTIONS", "/v2/nothing").status == 404)
        #expect(try client.exchange("OPTIONS", "*").headers["allow"] == "POST, GET, DELETE, OPTIONS")
        for method in ["TRACE", "QUERY"] {
            let refused = try client.exchange(method, "/v1/channels/x")
            #expect(refused.status == 405, "\(method)")
            #expect(refused.json["error"] as? String == "method_not_allowed")
            #expect(refused.headers["allow"] == "GET, DELETE")
        }
        // The connection still serves after each answer.
        #expect(try client.exchange("GET", "/v1/channels/x").status == 200)
    }

    @Test func aRequestHeadOverTheLimitGets431AndTheServerKeepsServing() throws {
        let fixture = try ServerFixture(configuration: HTTPServerConfiguration(maxHeaderSize: 4096), router: echoRouter())
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        let response = try client.exchange("GET", "/v1/channels/x", headers: ["X-Padding: " + String(repeating: "p", count: 8000)])
        #expect(response.status == 431)
        #expect(response.json["error"] as? String == "head_too_large")
        #expect(try RawHTTPClient(port: fixture.port).exchange("GET", "/v1/channels/x").status == 200)
    }

    @Test func anIdleKeepAliveConnectionIsClosedAfterTheTimeout() throws {
        let fixture = try ServerFixture(configuration: HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(idleTimeout: .milliseconds(200))),
                                        router: echoRouter())
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port, receiveTimeoutSeconds: 5)
        #expect(try client.exchange("GET", "/v1/channels/x").status == 200)
        #expect(client.isClosedByServer())
    }

    @Test func malformedRequestLineGets400AndTheServerKeepsServing() throws {
        let fixture = try ServerFixture(router: echoRouter())
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send(Array("THIS IS NOT HTTP\r\n\r\n".utf8))
        let response = try #require(try client.readResponse())
        #expect(response.status == 400)
        #expect(response.headers["content-type"] == "application/json")
        #expect(response.json["error"] as? String == "malformed_request_line")
        #expect(try RawHTTPClient(port: fixture.port).exchange("GET", "/v1/channels/x").status == 200)
    }

    @Test func aResponseMadeOnAnotherThreadIsSentFromTheLoop() throws {
        let fixture = try ServerFixture { request in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(30)) {
                // E.g. after a durable commit on a writer thread.
                request.loop.execute {
                    request.respond(.json(status: 202, ["durable": true]))
                }
            }
        }
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        for _ in 0..<3 {
            let response = try client.exchange("POST", "/v1/anything", body: Array("{}".utf8))
            #expect(response.status == 202)
            #expect(response.text == #"{"durable":true}"#)
        }
        #expect(fixture.inFlightRequests == 0)
    }

    @Test func aClientThatLeavesBeforeTheAnswerIsDroppedSafely() throws {
        let parked = Mutex<[HTTPRequest]>([])
        let fixture = try ServerFixture { request in
            if request.path == "/slow" { parked.withLock { $0.append(request) } } else { request.respond(HTTPResponse(status: 204)) }
        }
        defer { fixture.stop() }
        let leaving = try RawHTTPClient(port: fixture.port)
        try leaving.send(RawHTTPClient.request("POST", "/slow", body: Array("{}".utf8)))
        while parked.withLock({ $0.count }) == 0 { usleep(1000) }
        leaving.closeNow()
        let request = parked.withLock { $0[0] }
        // The server keeps reading while a request is handled, so it notices the departure.
        for _ in 0..<500 where try fixture.loop.sync({ request.isPending }) { usleep(10_000) }
        let sent = try fixture.loop.sync { request.respond(.json(status: 202, ["late": true])) }
        let secondAnswer = try fixture.loop.sync { request.respond(HTTPResponse(status: 500)) }
        #expect(!secondAnswer)
        // The request was dropped: the late answer goes nowhere, and nothing is sent twice.
        #expect(!sent)
        usleep(50_000)
        #expect(fixture.inFlightRequests == 0)
        #expect(try RawHTTPClient(port: fixture.port).exchange("GET", "/fast").status == 204)
    }

    @Test func fiftyConcurrentKeepAliveClientsOfTwentyRequestsEach() throws {
        let fixture = try ServerFixture(router: echoRouter())
        defer { fixture.stop() }
        let failures = Atomic<Int>(0)
        let port = fixture.port
        DispatchQueue.concurrentPerform(iterations: 50) { clientIndex in
            do {
                let client = try RawHTTPClient(port: port)
                for i in 0..<20 {
                    let response = try client.exchange("POST", "/v1/channels/c\(clientIndex)/events?limit=\(i)",
                                                       headers: ["Authorization: Bearer key\(clientIndex)"],
                                                       body: [UInt8](repeating: 7, count: i * 10))
                    let body = response.json
                    if response.status != 202 || body["id"] as? String != "c\(clientIndex)" || body["limit"] as? String != "\(i)"
                        || body["bytes"] as? Int != i * 10 {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            } catch {
                failures.add(1, ordering: .relaxed)
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }

    @Test func shutdownLetsAPendingRequestFinishThenRefusesNewConnections() throws {
        let parked = Mutex<[HTTPRequest]>([])
        let fixture = try ServerFixture { request in parked.withLock { $0.append(request) } }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send(RawHTTPClient.request("GET", "/pending"))
        while parked.withLock({ $0.count }) == 0 { usleep(1000) }

        let stopped = DispatchSemaphore(value: 0)
        fixture.loop.execute { fixture.server.shutdown(gracePeriod: .seconds(5)) { stopped.signal() } }
        #expect(stopped.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
        #expect(throws: RawHTTPClient.Failure.self) { try RawHTTPClient(port: fixture.port) }

        let request = parked.withLock { $0[0] }
        fixture.loop.execute { request.respond(.json(status: 200, ["last": true])) }
        let response = try #require(try client.readResponse())
        #expect(response.status == 200)
        #expect(response.headers["connection"]?.lowercased() == "close")
        #expect(stopped.wait(timeout: .now() + .seconds(2)) == .success)
        fixture.loop.stopAndWait()
    }

    @Test func shutdownAbandonsRequestsStillPendingAfterTheGracePeriod() throws {
        let parked = Mutex<[HTTPRequest]>([])
        let fixture = try ServerFixture { request in parked.withLock { $0.append(request) } }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send(RawHTTPClient.request("GET", "/never"))
        while parked.withLock({ $0.count }) == 0 { usleep(1000) }
        let stopped = DispatchSemaphore(value: 0)
        fixture.loop.execute { fixture.server.shutdown(gracePeriod: .milliseconds(50)) { stopped.signal() } }
        #expect(stopped.wait(timeout: .now() + .seconds(2)) == .success)
        #expect(client.isClosedByServer())
        let request = parked.withLock { $0[0] }
        #expect(try fixture.loop.sync { (request.isPending, request.respond(HTTPResponse(status: 200))) } == (false, false))
        fixture.loop.stopAndWait()
    }

    @Test func aNameInsteadOfANumericAddressIsRefusedClearly() throws {
        let loop = EventLoop.start(name: "http-test")
        defer { loop.stopAndWait() }
        #expect(throws: TransportError.socket("listen address must be a numeric IPv4 or IPv6 address, got localhost")) {
            try loop.sync { _ = try HTTPServer(loop: loop, configuration: HTTPServerConfiguration(host: "localhost")) { _ in } }
        }
    }
}
