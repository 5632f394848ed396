import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Nothing a client without a key, or one key, can hold keeps the others out: silent connections
/// are closed within the first-request deadline, one address holds its share of the connections,
/// the probes still answer a load balancer while the port is full, and one key's body heads hold
/// its share of the body budget, not the whole of it. Real sockets on a real gateway; other
/// clients are other loopback addresses (127.0.0.2, 127.0.0.3).
@Suite("Gateway lockouts", .heavy)
struct GatewayLockoutTests {
    /// What the gateway sends on `fd` until it closes the connection, and whether it did close it
    /// (rather than the read timing out).
    private func readUntilClosed(_ fd: Int32) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += chunk[..<count]
                continue
            }
            let closed = count == 0 || errno == ECONNRESET
            return (String(decoding: received, as: UTF8.self), closed)
        }
    }

    private func send(_ text: String, on fd: Int32) {
        _ = Array(text.utf8).withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Connections that send nothing, from `source`.
    private func silentConnections(_ count: Int, to port: Int, from source: String) throws -> [Int32] {
        try (0..<count).map { _ in try LoopbackSocket.connect(port: port, receiveTimeout: 20, source: source) }
    }

    private func metrics(_ fixture: GatewayFixture) throws -> String {
        try GatewayTestClient(port: fixture.port).request("GET", "/metrics").text
    }

    @Test func aConnectionThatSendsNothingIsClosedWithinTheFirstRequestDeadline() async throws {
        let fixture = try GatewayFixture { $0.http.firstRequestTimeout = .milliseconds(500) }
        defer { Task { await fixture.shutDown() } }
        let fd = try LoopbackSocket.connect(port: fixture.port, receiveTimeout: 20)
        defer { close(fd) }
        // Closed without a word, long before the idle timeout (60 s) or this read's 20 s.
        let (text, closed) = readUntilClosed(fd)
        #expect(closed && text.isEmpty, "\(text)")
        #expect(metricValue(try metrics(fixture), "touchline_http_first_request_timeouts_total") == 1)
    }

    @Test func oneAddressCannotTakeEveryConnection() async throws {
        let fixture = try GatewayFixture { configuration in
            configuration.http.maxConnectionsPerAddress = 4
            configuration.http.firstRequestTimeout = .seconds(3600)
        }
        defer { Task { await fixture.shutDown() } }
        let held = try silentConnections(4, to: fixture.port, from: "127.0.0.2")
        defer { held.forEach { close($0) } }
        let extra = try LoopbackSocket.connect(port: fixture.port, receiveTimeout: 20, source: "127.0.0.2")
        defer { close(extra) }
        let (refusal, closed) = readUntilClosed(extra)
        #expect(closed && refusal.hasPrefix("HTTP/1.1 429 "), "\(refusal)")
        #expect(refusal.contains(#""error":"too_many_connections_from_address""#) && refusal.contains("Retry-After: 1\r\n"), "\(refusal)")
        // Another address is served as ever.
        #expect(try fixture.admin.request("GET", "/v1/channels").status == 200)
        #expect(metricValue(try metrics(fixture), #"touchline_http_connections_refused_total{reason="too_many_connections_from_address"}"#) == 1)
    }

    /// Silent connections from other addresses take every general connection, then the probes'
    /// reserve: the provider API answers 503, but `/healthz`, `/readyz` and `/metrics` still
    /// answer a load balancer, each on a connection of the reserve.
    @Test func theProbesAnswerWhileSilentConnectionsFillThePort() async throws {
        let fixture = try GatewayFixture { configuration in
            configuration.http.maxConnections = 8
            configuration.http.maxConnectionsPerAddress = 8
            configuration.http.probeConnections = 2
            configuration.http.firstRequestTimeout = .seconds(3600)
        }
        defer { Task { await fixture.shutDown() } }
        let filling = try silentConnections(8, to: fixture.port, from: "127.0.0.2")
        defer { filling.forEach { close($0) } }

        let provider = try fixture.admin.request("GET", "/v1/channels")
        #expect(provider.status == 503 && provider.errorCode == "too_many_connections" && provider.header("Retry-After") == "1",
                "\(provider.text)")
        let health = try GatewayTestClient(port: fixture.port).request("GET", "/healthz")
        #expect(health.status == 200 && health.json?.string("status") == "alive", "\(health.text)")
        let readiness = try GatewayTestClient(port: fixture.port).request("GET", "/readyz")
        #expect(["ready", "not_ready"].contains(readiness.json?.string("status")), "the readiness answer itself: \(readiness.text)")

        // The reserve filled by silent connections too: each probe takes the slot of the oldest.
        let reserve = try silentConnections(2, to: fixture.port, from: "127.0.0.3")
        defer { reserve.forEach { close($0) } }
        #expect(try GatewayTestClient(port: fixture.port).request("GET", "/healthz").status == 200)
        let text = try metrics(fixture)
        #expect(metricValue(text, #"touchline_http_connections{pool="general"}"#) == 8)
        #expect(metricValue(text, #"touchline_http_connections{pool="probe"}"#) == 2, "the scrape's and one other: the reserve is full")
        #expect((metricValue(text, "touchline_http_probe_slots_reclaimed_total") ?? 0) >= 1)
        #expect(metricValue(text, #"touchline_http_connections_refused_total{reason="too_many_connections"}"#) == 1)
    }

    /// One provider key sends heads announcing 1 MiB bodies and never the bodies: it holds its
    /// share of the body budget (2 MiB of 4 MiB here) and its further heads get 429, while
    /// another provider's events are accepted.
    @Test func oneKeysBodyHeadsDoNotStopAnotherKeysEvents() async throws {
        let betaKey = "beta-secret-0123456789"
        let fixture = try GatewayFixture(maxBodyBytes: 1 << 20) { configuration in
            configuration.apiKeys.append(.init(key: betaKey, scope: .channelPrefix("beta-")))
            configuration.http.maxBufferedBodyBytes = 4 << 20
            configuration.http.maxBufferedBodyBytesPerKey = 2 << 20
        }
        defer { Task { await fixture.shutDown() } }
        let channel = #"{"id": "beta-x", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#
        #expect(try fixture.admin.request("POST", "/v1/channels", json: channel).status == 201)
        let head = "POST /v1/channels/club-x/events HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer \(GatewayFixture.clubKey)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(1 << 20)\r\n\r\n"
        var holding: [Int32] = []
        defer { holding.forEach { close($0) } }
        for held in 1...2 {
            let fd = try LoopbackSocket.connect(port: fixture.port, receiveTimeout: 20)
            holding.append(fd)
            send(head, on: fd)
            try await eventually("club's head \(held) holding its body's bytes") {
                (try? metricValue(metrics(fixture), #"touchline_http_buffered_body_bytes{scope="club-"}"#)) == Double(held << 20)
            }
        }
        for _ in 0..<2 {
            let fd = try LoopbackSocket.connect(port: fixture.port, receiveTimeout: 20)
            defer { close(fd) }
            send(head, on: fd)
            let (refusal, _) = readUntilClosed(fd)
            #expect(refusal.hasPrefix("HTTP/1.1 429 ") && refusal.contains(#""error":"key_body_budget_full""#), "\(refusal)")
            #expect(refusal.contains("Retry-After: 1\r\n") && !refusal.contains(GatewayFixture.clubKey))
        }
        let beta = GatewayTestClient(port: fixture.port, key: betaKey)
        for seq in 1...5 {
            let posted = try beta.request("POST", "/v1/channels/beta-x/events", json: #"{"seq": \#(seq), "patch": {"homeScore": \#(seq)}}"#)
            #expect(posted.status == 202, "\(posted.text)")
        }
        let text = try metrics(fixture)
        #expect(metricValue(text, #"touchline_http_body_refusals_total{reason="key_body_budget_full",scope="club-"}"#) == 2)
        #expect(metricValue(text, #"touchline_http_buffered_body_bytes{scope="beta-"}"#) == 0)
    }
}
