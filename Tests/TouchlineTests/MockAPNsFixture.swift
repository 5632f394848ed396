import APNs
import APNsMock
import Foundation
import HTTP2
import TouchlineCore
import TouchlineRuntime

/// A running mock APNs server plus a Touchline APNs client stack pointed at it, over real TLS
/// on loopback. Each test makes its own, so tests run in parallel without sharing state.
final class MockAPNsFixture: Sendable {
    static let bundleID = "com.example.touchline"
    static let keyID = "TESTKEY001"
    static let teamID = "TESTTEAM01"

    /// The app, team and key a mock serves: a second mock with another identity stands for
    /// another app of the same gateway.
    struct Identity: Sendable {
        var bundleID = MockAPNsFixture.bundleID
        var teamID = MockAPNsFixture.teamID
        var keyID = MockAPNsFixture.keyID
    }

    let identity: Identity
    let directory: String
    let mock: MockAPNsServer
    let addresses: MockAPNsServer.Addresses
    let loop: EventLoop
    let connections: APNsConnections
    let providerToken: ProviderToken
    var client: APNsClient { connections.client }

    /// - Parameters:
    ///   - configure: adjusts the mock's configuration (faults, limits, clock).
    ///   - clientClock: the clock of the client's provider token (virtual time in tests).
    init(pushConnections: Int = 1, clientClock: any WallClock = SystemClock(), refreshInterval: Duration = ProviderToken.defaultRefreshInterval,
         identity: Identity = Identity(), configure: (inout MockAPNsConfiguration) -> Void = { _ in }) throws {
        self.identity = identity
        directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let key = try MockAPNsProviderKeyFiles.generate(keyID: identity.keyID, in: directory)
        let certificates = try MockAPNsDevelopmentCertificates.generate(in: directory)
        var configuration = MockAPNsConfiguration(bundleID: identity.bundleID, teamID: identity.teamID,
                                                  keys: [.init(keyID: identity.keyID, path: key.publicKeyFile)],
                                                  certificateFile: certificates.certificateFile,
                                                  privateKeyFile: certificates.privateKeyFile)
        configure(&configuration)
        mock = try MockAPNsServer(configuration: configuration)
        addresses = try mock.start()
        var apns = APNsConfiguration(keyPath: key.privateKeyFile, keyID: identity.keyID, teamID: identity.teamID, bundleID: identity.bundleID,
                                     environment: .custom(pushHost: "localhost", pushPort: addresses.pushPort,
                                                          managementHost: "localhost", managementPort: addresses.managementPort))
        apns.tokenRefreshInterval = refreshInterval
        providerToken = try ProviderToken(configuration: apns, clock: clientClock)
        loop = EventLoop.start(name: "apns-test")
        connections = try APNsConnections(configuration: apns, providerToken: providerToken,
                                          options: .init(pushConnections: pushConnections, tls: TLSConfiguration(caFile: certificates.caFile)),
                                          loop: loop)
    }

    /// Sends `pushes` all at once from the loop and returns their results in order.
    func sendConcurrently(_ pushes: [LiveActivityPush]) async -> [Result<APNsResponse, APNsError>] {
        let client = self.client
        return await withCheckedContinuation { continuation in
            loop.execute {
                var results = [Result<APNsResponse, APNsError>?](repeating: nil, count: pushes.count)
                var remaining = pushes.count
                for (index, push) in pushes.enumerated() {
                    client.send(push) { result in
                        results[index] = result
                        remaining -= 1
                        if remaining == 0 { continuation.resume(returning: results.map { $0! }) }
                    }
                }
            }
        }
    }

    /// The push pool's connection figures (read on the loop).
    func pushConnectionStats() async throws -> [HTTP2ClientConnection.Stats] {
        let connections = self.connections
        return try await loop.submit { UncheckedSendable(connections.stats(of: .device)?.connections ?? []) }.value
    }

    func shutDown() async {
        await connections.shutdown()
        loop.stopAndWait()
        mock.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A minimal valid Live Activity update payload.
    static func updatePayload(home: Int = 1, at time: UnixTime = SystemClock().now()) -> [UInt8] {
        LiveActivityPayload(timestamp: time, event: .update,
                            contentState: .object([.init("home", .integer(Int64(home))), .init("away", .integer(0))])).encoded()
    }

    /// `count` distinct 64-hex-character device tokens.
    static func tokens(_ count: Int, salt: Int = 0) -> [String] {
        (0..<count).map { i in
            let hex = String(i + salt * 1_000_000, radix: 16)
            return String(repeating: "a", count: 64 - hex.count) + hex
        }
    }
}

/// Moves a value that is only read after a happens-before edge (the loop's mailbox) across threads.
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
