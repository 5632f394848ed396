import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineRuntime

/// What an unauthenticated or abusive client can make the server hold: a connection each up to
/// the cap, a head each, and no body at all without passing the admission hook.
@Suite(.heavy) struct HTTPServerLimitsTests {
    /// Admits only heads carrying `Authorization: Bearer good`; counts what reaches the handler.
    private static func guarded(_ configuration: HTTPServerConfiguration = HTTPServerConfiguration(),
                                handled: Counter) throws -> ServerFixture {
        var configuration = configuration
        configuration.admission = { head in
            head.header("authorization") == "Bearer good" ? .admit(bodyOwner: nil)
                : .refuse(HTTPError(status: 401, code: "invalid_api_key", message: "the API key is not known to this gateway",
                                    headers: [("WWW-Authenticate", "Bearer")]))
        }
        return try ServerFixture(configuration: configuration) { request in
            handled.add()
            request.respond(.json(status: 202, ["bytes": .integer(Int64(request.body.count))]))
        }
    }

    /// Bodies up to 800 bytes, 1000 bytes of them held at once.
    private static let budgetOf1000 = HTTPServerConfiguration(maxBodySize: 800, connectionLimits: HTTPConnectionLimits(maxBufferedBodyBytes: 1000))

    @Test func theAdmissionHookAnswersBeforeTheBodyIsRead() throws {
        let handled = Counter()
        let fixture = try Self.guarded(handled: handled)
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        // A 1 MiB body announced, a sliver of it sent, and the rest never comes.
        try client.send("POST /v1/channels/x/events HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer bad\r\nContent-Length: 1048576\r\n\r\n")
        try client.send([UInt8](repeating: UInt8(ascii: "x"), count: 4096))
        let response = try #require(try client.readResponse())
        #expect(response.status == 401)
        #expect(response.json["error"] as? String == "invalid_api_key")
        #expect(response.headers["www-authenticate"] == "Bearer")
        #expect(response.headers["connection"] == "close")
        #expect(client.isClosedByServer())
        #expect(handled.count == 0)
        #expect(fixture.bufferedBodyBytes == 0)

        // Expect: 100-continue gets the refusal instead of the go-ahead; an admitted one gets both.
        let asking = try RawHTTPClient(port: fixture.port)
        try asking.send("POST /a HTTP/1.1\r\nHost: gw\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        #expect(try asking.readResponse()?.status == 401)
        let admitted = try RawHTTPClient(port: fixture.port)
        try admitted.send("POST /a HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer good\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        #expect(try admitted.readResponse()?.status == 100)
        try admitted.send("hello")
        let accepted = try #require(try admitted.readResponse())
        #expect(accepted.status == 202 && accepted.json["bytes"] as? Int == 5)
    }

    @Test func aRefusalWithoutABodyKeepsTheConnection() throws {
        let handled = Counter()
        let fixture = try Self.guarded(handled: handled)
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        #expect(try client.exchange("GET", "/v1/channels").status == 401)
        #expect(try client.exchange("GET", "/v1/channels", headers: ["Authorization: Bearer good"]).status == 202)
    }

    @Test func connectionsOverTheCapGetA503AndTheCapFreesAsConnectionsClose() throws {
        let handled = Counter()
        let fixture = try Self.guarded(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(maxConnections: 3)), handled: handled)
        defer { fixture.stop() }
        var open = try (0..<3).map { _ in try RawHTTPClient(port: fixture.port) }
        for client in open { #expect(try client.exchange("GET", "/", headers: ["Authorization: Bearer good"]).status == 202) }
        let extra = try RawHTTPClient(port: fixture.port)
        try extra.send(RawHTTPClient.request("GET", "/", headers: ["Authorization: Bearer good"]))
        let refused = try #require(try extra.readResponse())
        #expect(refused.status == 503)
        #expect(refused.json["error"] as? String == "too_many_connections")
        #expect(refused.headers["connection"] == "close" && refused.headers["retry-after"] == "1")
        #expect(extra.isClosedByServer())
        #expect(fixture.openConnections == 3)

        open.removeLast()
        var answered = false
        for _ in 0..<100 where !answered {
            usleep(20_000)
            let again = try RawHTTPClient(port: fixture.port)
            answered = (try? again.exchange("GET", "/", headers: ["Authorization: Bearer good"]).status) == 202
        }
        #expect(answered)
    }

    @Test func oneAddressCannotTakeEveryConnection() throws {
        let handled = Counter()
        let fixture = try Self.guarded(HTTPServerConfiguration(connectionLimits: HTTPConnectionLimits(maxConnections: 10, maxConnectionsPerAddress: 2)),
                                       handled: handled)
        defer { fixture.stop() }
        let held = try (0..<2).map { _ in try RawHTTPClient(port: fixture.port, source: "127.0.0.2") }
        for client in held { #expect(try client.exchange("GET", "/", headers: ["Authorization: Bearer good"]).status == 202) }
        let extra = try RawHTTPClient(port: fixture.port, source: "127.0.0.2")
        try extra.send(RawHTTPClient.request("GET", "/", headers: ["Authorization: Bearer good"]))
        let refused = try #require(try extra.readResponse())
        #expect(refused.status == 429)
        #expect(refused.json["error"] as? String == "too_many_connections_from_address")
        #expect(refused.headers["connection"] == "close" && refused.headers["retry-after"] == "1")
        #expect(extra.isClosedByServer())
        // Another address still gets in.
        let other = try RawHTTPClient(port: fixture.port, source: "127.0.0.1")
        #expect(try other.exchange("GET", "/", headers: ["Authorization: Bearer good"]).status == 202)
        #expect(fixture.figures.connectionsRefused == ["too_many_connections_from_address": 1])
        #expect(fixture.openConnections == 3)
    }

    /// Silent connections fill the port (general slots, then the probes' reserve): a probe is
    /// still answered, on a connection of the reserve that closes after it; anything else there
    /// gets the answer of a full server.
    @Test func probesAreAnsweredWhileSilentConnectionsFillThePort() throws {
        let configuration = HTTPServerConfiguration(
            connectionLimits: HTTPConnectionLimits(maxConnections: 2, probeConnections: 2, firstRequestTimeout: .seconds(3600)),
            probePaths: ["/healthz"])
        let fixture = try ServerFixture(configuration: configuration) { request in
            request.respond(.json(status: 200, ["path": .string(request.target.path)]))
        }
        defer { fixture.stop() }
        func waitForOpenConnections(_ count: Int) {
            let giveUp = ContinuousClock.now + .seconds(30)
            while fixture.openConnections != count && ContinuousClock.now < giveUp { usleep(2000) }
        }
        let silent = try (0..<2).map { _ in try RawHTTPClient(port: fixture.port, source: "127.0.0.2") }
        waitForOpenConnections(2)

        let probe = try RawHTTPClient(port: fixture.port)
        let answered = try probe.exchange("GET", "/healthz")
        #expect(answered.status == 200 && answered.json["path"] as? String == "/healthz")
        #expect(answered.headers["connection"] == "close")
        #expect(probe.isClosedByServer())
        let provider = try RawHTTPClient(port: fixture.port)
        let busy = try provider.exchange("GET", "/v1/channels")
        #expect(busy.status == 503 && busy.json["error"] as? String == "too_many_connections" && busy.headers["retry-after"] == "1")
        #expect(provider.isClosedByServer())

        // The reserve filled by silent connections too: the oldest gives its slot to the probe.
        waitForOpenConnections(2)
        let silentProbes = try (0..<2).map { _ in try RawHTTPClient(port: fixture.port, source: "127.0.0.3") }
        waitForOpenConnections(4)
        let again = try RawHTTPClient(port: fixture.port)
        #expect(try again.exchange("GET", "/healthz").status == 200)
        #expect(silentProbes[0].isClosedByServer())
        #expect(fixture.figures.probeSlotsReclaimed == 1)
        withExtendedLifetime((silent, silentProbes)) {}
    }

    /// One key sending heads of large bodies and no bodies holds its share of the budget, no
    /// more: another key's bodies are still taken. With a share as large as the budget, the same
    /// heads lock the other key out (what a single shared budget did).
    @Test func oneKeysHeadsLeaveTheRestOfTheBodyBudgetToOtherKeys() throws {
        func owned(_ perKey: Int) throws -> ServerFixture {
            var configuration = HTTPServerConfiguration(
                maxBodySize: 800, connectionLimits: HTTPConnectionLimits(maxBufferedBodyBytes: 3000, maxBufferedBodyBytesPerKey: perKey))
            configuration.admission = { head in
                switch head.header("authorization") {
                case "Bearer a": .admit(bodyOwner: 1)
                case "Bearer b": .admit(bodyOwner: 2)
                default: .refuse(HTTPError(status: 401, code: "invalid_api_key", message: "unknown key"))
                }
            }
            return try ServerFixture(configuration: configuration) { request in
                request.respond(.json(status: 202, ["bytes": .integer(Int64(request.body.count))]))
            }
        }
        /// Heads of 800 bytes from key a, whose bodies never come; the answers to those refused.
        func holdHeads(_ fixture: ServerFixture, count: Int) throws -> (held: [RawHTTPClient], refusals: [RawHTTPClient.Response]) {
            var held: [RawHTTPClient] = []
            var refusals: [RawHTTPClient.Response] = []
            for _ in 0..<count {
                let before = fixture.bufferedBodyBytes
                let client = try RawHTTPClient(port: fixture.port)
                try client.send("POST /events HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer a\r\nContent-Length: 800\r\n\r\n")
                // Either the server reserves the body (and then waits for it) or it answers; a
                // bound that only a bug reaches.
                let giveUp = ContinuousClock.now + .seconds(30)
                while fixture.bufferedBodyBytes == before && fixture.figures.bodyRefusals.values.reduce(0, +) == refusals.count
                        && ContinuousClock.now < giveUp {
                    usleep(2000)
                }
                if fixture.bufferedBodyBytes > before { held.append(client) } else { refusals.append(try #require(try client.readResponse())) }
            }
            return (held, refusals)
        }
        let body = [UInt8](repeating: UInt8(ascii: "b"), count: 800)

        let fair = try owned(1000)
        defer { fair.stop() }
        let (held, refusals) = try holdHeads(fair, count: 3)
        #expect(held.count == 1 && fair.bufferedBodyBytes == 800)
        #expect(refusals.count == 2)
        for refusal in refusals {
            #expect(refusal.status == 429 && refusal.json["error"] as? String == "key_body_budget_full" && refusal.headers["retry-after"] == "1")
        }
        let other = try RawHTTPClient(port: fair.port)
        #expect(try other.exchange("POST", "/events", headers: ["Authorization: Bearer b"], body: body).status == 202)
        #expect(fair.figures.bodyRefusals == [HTTPServerFigures.BodyRefusal(code: "key_body_budget_full", owner: 1): 2])
        #expect(fair.figures.bufferedBodyBytesByOwner == [1: 800])

        let shared = try owned(3000)
        defer { shared.stop() }
        let (heldShared, _) = try holdHeads(shared, count: 3)
        #expect(heldShared.count == 3)
        let lockedOut = try RawHTTPClient(port: shared.port)
        let busy = try lockedOut.exchange("POST", "/events", headers: ["Authorization: Bearer b"], body: body)
        #expect(busy.status == 503 && busy.json["error"] as? String == "server_busy")
        withExtendedLifetime((held, heldShared)) {}
    }

    @Test func bodiesTogetherAreCappedAndAFullBudgetAnswers503() throws {
        let handled = Counter()
        let fixture = try Self.guarded(Self.budgetOf1000, handled: handled)
        defer { fixture.stop() }
        let first = try RawHTTPClient(port: fixture.port)
        try first.send("POST /a HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer good\r\nContent-Length: 800\r\n\r\n")
        try first.send([UInt8](repeating: 1, count: 100))
        while fixture.bufferedBodyBytes == 0 { usleep(1000) }
        #expect(fixture.bufferedBodyBytes == 800)

        let second = try RawHTTPClient(port: fixture.port)
        try second.send("POST /b HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer good\r\nContent-Length: 300\r\n\r\n")
        let busy = try #require(try second.readResponse())
        #expect(busy.status == 503 && busy.json["error"] as? String == "server_busy")
        #expect(busy.headers["retry-after"] == "1")

        try first.send([UInt8](repeating: 1, count: 700))
        #expect(try first.readResponse()?.status == 202)
        #expect(fixture.bufferedBodyBytes == 0)
        let third = try RawHTTPClient(port: fixture.port)
        #expect(try third.exchange("POST", "/c", headers: ["Authorization: Bearer good"], body: [UInt8](repeating: 2, count: 300)).status == 202)
    }

    @Test func aChunkedBodyCountsAgainstTheBudgetAsItArrives() throws {
        let handled = Counter()
        let fixture = try Self.guarded(Self.budgetOf1000, handled: handled)
        defer { fixture.stop() }
        let holder = try RawHTTPClient(port: fixture.port)
        try holder.send("POST /a HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer good\r\nContent-Length: 800\r\n\r\n")
        while fixture.bufferedBodyBytes == 0 { usleep(1000) }
        let chunked = try RawHTTPClient(port: fixture.port)
        let chunks = "64\r\n\(String(repeating: "c", count: 100))\r\nc8\r\n\(String(repeating: "c", count: 200))\r\n"
        try chunked.send("POST /b HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer good\r\nTransfer-Encoding: chunked\r\n\r\n\(chunks)")
        let busy = try #require(try chunked.readResponse())
        #expect(busy.status == 503 && busy.json["error"] as? String == "server_busy")
        #expect(fixture.bufferedBodyBytes == 800)
    }

    @Test func theClientReadsTheRefusalOfABodyItIsStillSendingRatherThanAReset() throws {
        let handled = Counter()
        let fixture = try Self.guarded(HTTPServerConfiguration(maxBodySize: 1024), handled: handled)
        defer { fixture.stop() }
        let client = try RawHTTPClient(port: fixture.port)
        try client.send("POST /a HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer good\r\nContent-Length: 500000\r\n\r\n")
        // Keeps sending after the server has answered and shut its side.
        for _ in 0..<8 { try client.send([UInt8](repeating: UInt8(ascii: "z"), count: 32 << 10)) }
        let (bytes, reset) = client.readUntilClosed()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"), "\(text.prefix(200))")
        #expect(text.contains(#""error":"body_too_large""#))
        #expect(!reset)
        #expect(handled.count == 0)
    }
}
