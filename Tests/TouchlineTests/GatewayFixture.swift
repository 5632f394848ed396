import APNs
import APNsMock
import Foundation
import Touchline
import TouchlineCore
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting

/// A gateway on a fresh data directory, listening on a free loopback port, with an admin key
/// and a key scoped to channels starting with `club-` (whose kickoffs may also address the
/// `team:` topics); on SQLite and the bundled mock APNs unless
/// `backends` says otherwise (e.g. `.inMemoryStores`, for a store the test can hold or fail).
///
/// Its clients reach the gateway over loopback, or in process (`transport`); `init(tier:)` makes
/// the two tiers a test body runs on (see ``Tier``).
final class GatewayFixture: Sendable {
    static let adminKey = "admin-secret-0123456789"
    static let clubKey = "club-secret"

    /// The two tiers of the API tests: `.inProcess`, the gateway on the in-memory stores and APNs
    /// with its clients in process (no file, no socket, no TLS: no heavy slot); `.live`, the
    /// gateway on SQLite and the bundled strict mock APNs over TLS, its clients over loopback.
    enum Tier: Sendable, CaseIterable {
        case inProcess, live
    }

    let directory: String
    let gateway: Gateway
    let port: Int
    let transport: GatewayTestClient.Transport
    /// The in-memory stores and APNs of an `.inProcess` fixture (nil on the live tier).
    let inMemory: InMemoryParts?

    init(apns: GatewayConfiguration.APNsSettings? = nil, directory: String? = nil, maxBodyBytes: Int = 8192,
         policy: ChannelPolicy = .default, personalQueue: PersonalQueueSettings = PersonalQueueSettings(),
         metrics: MetricsSettings = MetricsSettings(), webhooks: WebhookSettings = WebhookSettings(), storeFaultFile: String? = nil,
         clock: any WallClock = SystemClock(), backends: Gateway.Backends = .standard, inProcess: Bool = false,
         inMemory: InMemoryParts? = nil, configure: (inout GatewayConfiguration) -> Void = { _ in },
         reloadedAPNs: (@Sendable () -> GatewayConfiguration.APNsSettings?)? = nil,
         reloadedApps: (@Sendable () -> [GatewayConfiguration.App])? = nil) throws {
        self.directory = try directory ?? MockAPNsDevelopmentCertificates.temporaryDirectory()
        var configuration = GatewayConfiguration(
            apnsMode: apns == nil ? .mock : .apple, apns: apns, listenHost: "127.0.0.1", listenPort: 0, dataDirectory: self.directory,
            apiKeys: [.init(key: Self.adminKey, scope: .admin), .init(key: Self.clubKey, scope: .channelPrefix("club-"), followTopics: ["team:*"])],
            defaultPolicy: policy, maxBodyBytes: maxBodyBytes, personalQueue: personalQueue, metrics: metrics)
        configuration.storeFaultFile = storeFaultFile
        configuration.webhooks = webhooks
        configure(&configuration)
        // A key reload reads this configuration again, with the APNs settings `reloadedAPNs` and
        // the apps `reloadedApps` give then.
        let base = configuration
        let reread: @Sendable () -> GatewayConfiguration = {
            var again = base
            if let reloadedAPNs { again.apns = reloadedAPNs() }
            if let reloadedApps { again.apps = reloadedApps() }
            return again
        }
        let source = reloadedAPNs == nil && reloadedApps == nil ? nil : reread
        gateway = Gateway(configuration: configuration, clock: clock, backends: backends, configurationSource: source)
        port = try gateway.start()
        transport = inProcess ? .inProcess(gateway) : .live(port: port)
        self.inMemory = inMemory
    }

    /// A gateway on `tier`'s backends, its clients on `tier`'s transport.
    convenience init(tier: Tier, maxBodyBytes: Int = 8192, clock: any WallClock = SystemClock(),
                     configure: (inout GatewayConfiguration) -> Void = { _ in }) throws {
        switch tier {
        case .live:
            try self.init(maxBodyBytes: maxBodyBytes, clock: clock, configure: configure)
        case .inProcess:
            let parts = InMemoryParts()
            try self.init(apns: InMemoryParts.unusedAPNsSettings, maxBodyBytes: maxBodyBytes, clock: clock, backends: parts.backends,
                          inProcess: true, inMemory: parts, configure: configure)
        }
    }

    var admin: GatewayTestClient { client(key: Self.adminKey) }

    /// A client of this gateway with `key`, on the fixture's transport.
    func client(key: String?) -> GatewayTestClient { GatewayTestClient(transport, key: key) }

    /// The mock the gateway started itself.
    var mock: MockAPNsServer { gateway.bundledMockAPNs! }

    /// Every stored personal job's id, in any status, oldest first, in one read (jobs move between
    /// statuses while the queue runs them, so a read per status could see one twice or not at
    /// all): from the in-memory store in process, from `personal.sqlite` live.
    func storedJobIDs() throws -> [String] {
        if let inMemory { return try inMemory.personal.openReader().allJobs().map(\.id) }
        let connection = try SQLiteConnection(path: directory + "/personal.sqlite")
        defer { connection.close() }
        return try connection.query("SELECT id FROM personal_jobs ORDER BY created_at, id") { $0.text(at: 0) ?? "" }
    }

    /// Idempotency records the personal store keeps, expired or not, on either tier.
    func idempotencyRecordCount() throws -> Int {
        if let inMemory { return try inMemory.personal.openReader().idempotencyRecordCount() }
        let reader = try SQLiteTokenReader(path: directory + "/personal.sqlite")
        defer { reader.close() }
        return try reader.idempotencyRecordCount()
    }

    func shutDown(removingData: Bool = true) async {
        await gateway.shutdown()
        if removingData { try? FileManager.default.removeItem(atPath: directory) }
    }

    static let matchAttributes = """
        {"homeName": "Arsenal", "homeCode": "ARS", "awayName": "Chelsea", "awayCode": "CHE",
         "competition": "Premier League", "kickoff": 1767290400}
        """
}

/// The stores and APNs of a gateway on `Gateway.Backends.inMemory`.
struct InMemoryParts: Sendable {
    let channels = InMemoryStore(name: "channels")
    let personal = InMemoryStore(name: "personal")
    let apns = InMemoryAPNsPair()

    var backends: Gateway.Backends { .inMemory(channels: channels, personal: personal, apns: apns) }

    /// APNs settings for `.apple` mode, which the in-memory dispatch never reads (development
    /// mode would start the bundled mock instead). A custom environment, like the live tier's
    /// mock: personal jobs reach tokens of either environment (sandbox or production would
    /// send only to tokens registered for it).
    static let unusedAPNsSettings = GatewayConfiguration.APNsSettings(
        keyPath: "/nonexistent/key.p8", keyID: "KEY", teamID: "TEAM", bundleID: "com.example.touchline",
        environment: .custom(pushHost: "apns.invalid", pushPort: 443, managementHost: "apns.invalid", managementPort: 443))
}

extension JSONValue {
    /// A string member (test convenience).
    func string(_ name: String) -> String? {
        if case .string(let value)? = self[member: name] { return value }
        return nil
    }

    /// An integer member (test convenience).
    func integer(_ name: String) -> Int64? {
        if case .integer(let value)? = self[member: name] { return value }
        return nil
    }
}

extension MockAPNsFixture {
    /// The `touchline serve` flags that point a gateway process at this fixture's mock.
    var serveArguments: [String] {
        let settings = gatewaySettings
        var arguments = ["--apns-key", settings.keyPath, "--apns-key-id", settings.keyID, "--apns-team-id", settings.teamID,
                         "--apns-bundle-id", settings.bundleID, "--apns-ca-file", settings.caFile!]
        if case .custom(let pushHost, let pushPort, let managementHost, let managementPort) = settings.environment {
            arguments += ["--apns-environment", "\(pushHost):\(pushPort),\(managementHost):\(managementPort)"]
        }
        return arguments
    }

    /// APNs settings that point a gateway at this fixture's mock (a mock that outlives gateways).
    var gatewaySettings: GatewayConfiguration.APNsSettings {
        GatewayConfiguration.APNsSettings(
            keyPath: directory + "/AuthKey_\(identity.keyID).p8", keyID: identity.keyID, teamID: identity.teamID, bundleID: identity.bundleID,
            environment: .custom(pushHost: "localhost", pushPort: addresses.pushPort, managementHost: "localhost",
                                 managementPort: addresses.managementPort),
            caFile: directory + "/ca.pem")
    }
}
