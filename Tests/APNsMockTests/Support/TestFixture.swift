import APNsMock
import Foundation
import TouchlineCore

/// Key material shared by all tests of this process: generated once with the `openssl` command.
struct TestFixture: Sendable {
    static let bundleID = "com.example.sports"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let otherKeyID = "KEY7654321"

    let directory: String
    let certificates: MockAPNsDevelopmentCertificates.Files
    /// The accepted key (configured by its public half).
    let key: MockAPNsProviderKeyFiles.Files
    /// A key the mock does not know.
    let strangerKey: MockAPNsProviderKeyFiles.Files

    private static let made = Result { () throws -> TestFixture in
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        return TestFixture(directory: directory,
                           certificates: try MockAPNsDevelopmentCertificates.generate(in: directory + "/tls"),
                           key: try MockAPNsProviderKeyFiles.generate(keyID: keyID, in: directory + "/keys"),
                           strangerKey: try MockAPNsProviderKeyFiles.generate(keyID: otherKeyID, in: directory + "/stranger"))
    }

    static func get() throws -> TestFixture { try made.get() }

    /// A configuration for a server on free ports with the fixture's certificate and key.
    func configuration(clock: any WallClock = SystemClock(), faults: MockAPNsConfiguration.Faults = .init(),
                       channelLimit: Int = 10_000) -> MockAPNsConfiguration {
        MockAPNsConfiguration(bundleID: Self.bundleID, teamID: Self.teamID,
                              keys: [.init(keyID: Self.keyID, path: key.publicKeyFile)],
                              certificateFile: certificates.certificateFile, privateKeyFile: certificates.privateKeyFile,
                              channelLimit: channelLimit, clock: clock, faults: faults)
    }

    /// A fresh provider token signed with the accepted key.
    func token(issuedAt: UnixTime = SystemClock().now(), keyID: String = keyID, teamID: String = teamID) throws -> String {
        try ProviderTokenSigner.sign(keyFile: key.privateKeyFile, keyID: keyID, teamID: teamID, issuedAt: issuedAt.seconds)
    }
}

/// A running mock for one test; stops when released.
final class RunningMock: Sendable {
    let server: MockAPNsServer
    let addresses: MockAPNsServer.Addresses
    let fixture: TestFixture

    init(_ configuration: MockAPNsConfiguration, fixture: TestFixture) throws {
        server = try MockAPNsServer(configuration: configuration)
        addresses = try server.start()
        self.fixture = fixture
    }

    deinit { server.stop() }

    /// A client request to the push port.
    func push(_ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil, method: String = "POST") -> CurlRequest {
        CurlRequest(url: "https://127.0.0.1:\(addresses.pushPort)\(path)", method: method, headers: headers, body: body)
    }

    /// A client request to the management port.
    func manage(_ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil, method: String = "POST") -> CurlRequest {
        CurlRequest(url: "https://127.0.0.1:\(addresses.managementPort)\(path)", method: method, headers: headers, body: body)
    }

    /// Sends the requests in order over one HTTP/2 connection.
    func send(_ requests: [CurlRequest]) throws -> [CurlResponse] {
        try Curl.send(requests, caFile: fixture.certificates.caFile)
    }

    func send(_ request: CurlRequest) throws -> CurlResponse {
        try send([request])[0]
    }
}

/// Test values for Live Activity pushes.
enum Sample {
    static let deviceToken = String(repeating: "ab", count: 32)
    static let liveActivityTopic = TestFixture.bundleID + ".push-type.liveactivity"

    static func deviceToken(_ n: Int) -> String {
        String(repeating: "cd", count: 30) + String(format: "%08x", n)
    }

    static let update = json("""
        {"aps":{"timestamp":1767290400,"event":"update","content-state":{"home":2,"away":1,"clock":"67'"},
        "stale-date":1767291300,"relevance-score":100,"alert":{"title":"Goal!","body":"Home 2-1 Away","sound":"default"}}}
        """)

    /// An update whose alert is `alert` (JSON text), for the localized shapes.
    static func update(alert: String) -> [UInt8] {
        json(#"{"aps":{"timestamp":1767290400,"event":"update","content-state":{"home":2},"stale-date":1767291300,"alert":\#(alert)}}"#)
    }

    static func start(channel: String? = nil) -> [UInt8] {
        let channelKey = channel.map { "\"input-push-channel\":\"\($0)\"," } ?? ""
        return json("""
            {"aps":{"timestamp":1767286800,"event":"start",\(channelKey)"attributes-type":"MatchAttributes",
            "attributes":{"matchId":"m-123"},"content-state":{"home":0,"away":0},"alert":{"title":"Kick-off","body":"HOM v AWY"}}}
            """)
    }

    static func json(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Headers of a valid Live Activity device push.
    static func deviceHeaders(token: String, extra: [(String, String)] = []) -> [(String, String)] {
        [("authorization", "bearer \(token)"), ("apns-push-type", "liveactivity"), ("apns-topic", liveActivityTopic)] + extra
    }

    /// Headers of a valid broadcast.
    static func broadcastHeaders(token: String, channel: String, extra: [(String, String)] = []) -> [(String, String)] {
        [("authorization", "bearer \(token)"), ("apns-push-type", "liveactivity"), ("apns-channel-id", channel),
         ("apns-expiration", "0"), ("apns-priority", "10")] + extra
    }
}
