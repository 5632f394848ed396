import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineTesting

/// The gateway refuses a body without a known API key from the request head alone, with the
/// API's own 401, before reading (or holding) any of the body.
@Suite("Gateway admission", .heavy)
struct GatewayAdmissionTests {
    /// Sends `head` and `partialBody` on a fresh connection, never the rest of the body, and
    /// returns what the gateway answers before it closes.
    private func answer(port: Int, head: String, partialBody: Int = 0) throws -> String {
        let fd = try LoopbackSocket.connect(port: port, receiveTimeout: 5)
        defer { close(fd) }
        let bytes = Array(head.utf8) + [UInt8](repeating: UInt8(ascii: "{"), count: partialBody)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += chunk[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    @Test func aBodyWithoutAKnownKeyGetsTheAPIs401BeforeItIsRead() async throws {
        let fixture = try GatewayFixture()
        let unknown = try answer(port: fixture.port, head: "POST /v1/channels HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer not-a-key\r\n"
                                                         + "Content-Type: application/json\r\nContent-Length: 8000\r\n\r\n", partialBody: 100)
        #expect(unknown.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"), "\(unknown)")
        #expect(unknown.contains("WWW-Authenticate: Bearer\r\n"))
        #expect(unknown.hasSuffix(#"{"error":"invalid_api_key","message":"the API key is not known to this gateway"}"#), "\(unknown)")

        let missing = try answer(port: fixture.port, head: "POST /v1/channels/x/events HTTP/1.1\r\nHost: gw\r\nContent-Length: 8000\r\n\r\n")
        #expect(missing.contains(#""error":"missing_api_key""#), "\(missing)")
        let chunked = try answer(port: fixture.port, head: "POST /v1/tokens HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(chunked.hasPrefix("HTTP/1.1 401 "), "\(chunked)")
        // No route takes it: the router's own answer, still before the body.
        let nowhere = try answer(port: fixture.port, head: "POST /v1/nowhere HTTP/1.1\r\nHost: gw\r\nContent-Length: 8000\r\n\r\n")
        #expect(nowhere.hasPrefix("HTTP/1.1 404 ") && nowhere.contains(#""error":"not_found""#), "\(nowhere)")
        let wrongMethod = try answer(port: fixture.port, head: "PUT /v1/channels HTTP/1.1\r\nHost: gw\r\nContent-Length: 8000\r\n\r\n")
        #expect(wrongMethod.hasPrefix("HTTP/1.1 405 ") && wrongMethod.contains("Allow: POST, GET\r\n"), "\(wrongMethod)")
        await fixture.shutDown()
    }

    /// Two credentials could be read either way (a proxy checking one, the gateway the other):
    /// refused like two Host fields; and `GET *` is no path (it used to serve the dashboard).
    @Test func twoAuthorizationFieldsOrAnAsteriskTargetAre400() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let twice = try answer(port: fixture.port, head: "GET /v1/channels HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer \(GatewayFixture.adminKey)\r\n"
                                                       + "Authorization: Bearer not-a-key\r\n\r\n")
        #expect(twice.hasPrefix("HTTP/1.1 400 ") && twice.contains(#""error":"duplicate_authorization""#), "\(twice)")
        #expect(!twice.contains(GatewayFixture.adminKey))
        let reversed = try answer(port: fixture.port, head: "POST /v1/channels HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer not-a-key\r\n"
                                                          + "Authorization: Bearer \(GatewayFixture.adminKey)\r\nContent-Length: 2\r\n\r\n{}")
        #expect(reversed.hasPrefix("HTTP/1.1 400 ") && reversed.contains(#""error":"duplicate_authorization""#), "\(reversed)")
        let asterisk = try answer(port: fixture.port, head: "GET * HTTP/1.1\r\nHost: gw\r\n\r\n")
        #expect(asterisk.hasPrefix("HTTP/1.1 400 ") && asterisk.contains(#""error":"invalid_target""#), "\(asterisk)")
        // One Authorization field, and a path, as before.
        #expect(try fixture.admin.request("GET", "/v1/channels").status == 200)
    }

    @Test func requestsWithAKnownKeyOrWithoutABodyReachTheRoutes() async throws {
        let fixture = try GatewayFixture()
        let created = try fixture.admin.request("POST", "/v1/channels", json: #"{"id": "club-adm", "storagePolicy": "no-storage"}"#)
        #expect(created.status == 201, "\(created.text)")
        // A provider key passes admission; its scope is the route's to judge.
        let club = GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey)
        let outside = try club.request("POST", "/v1/channels", json: #"{"id": "other-1", "storagePolicy": "no-storage"}"#)
        #expect(outside.status == 403 && outside.errorCode == "forbidden")
        // Without a body the route answers, as before: its own 401, the probes without a key.
        #expect(try GatewayTestClient(port: fixture.port).request("GET", "/v1/channels").errorCode == "missing_api_key")
        #expect(try GatewayTestClient(port: fixture.port).request("GET", "/healthz").status == 200)
        await fixture.shutDown()
    }
}
