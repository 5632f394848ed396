import APNs
import APNsMock
import Foundation
import TouchlineCore
import TouchlineRuntime

/// `touchline apns-demo`: the bundled mock APNs plus a short, narrated session of the APNs client alone.
///
/// Everything runs over real TLS and HTTP/2 on loopback; only the APNs server is a stand-in.
enum APNsDemoCommand {
    static let bundleID = "com.example.touchline"
    static let keyID = "DEMOKEY001"
    static let teamID = "DEMOTEAM01"
    /// A device token the mock treats as uninstalled (410 Unregistered).
    static let uninstalledToken = String(repeating: "de", count: 32)

    static func run() async -> Int32 {
        do {
            try await narrate()
            return 0
        } catch {
            printError("touchline apns-demo: \(error)")
            return 1
        }
    }

    private static func narrate() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = try MockAPNsProviderKeyFiles.generate(keyID: keyID, in: directory)
        let certificates = try MockAPNsDevelopmentCertificates.generate(in: directory)

        var mockConfiguration = MockAPNsConfiguration(bundleID: bundleID, teamID: teamID,
                                                      keys: [.init(keyID: keyID, path: key.publicKeyFile)],
                                                      certificateFile: certificates.certificateFile,
                                                      privateKeyFile: certificates.privateKeyFile,
                                                      host: "127.0.0.1", pushPort: 0, managementPort: 0, threads: 1)
        mockConfiguration.faults.unregisteredTokens = [uninstalledToken]
        let mock = try MockAPNsServer(configuration: mockConfiguration)
        let addresses = try mock.start()
        defer { mock.stop() }
        say("mock APNs on \(addresses.host): push port \(addresses.pushPort), channel management port \(addresses.managementPort)")

        let configuration = APNsConfiguration(keyPath: key.privateKeyFile, keyID: keyID, teamID: teamID, bundleID: bundleID,
                                              environment: .custom(pushHost: "localhost", pushPort: addresses.pushPort,
                                                                   managementHost: "localhost", managementPort: addresses.managementPort))
        let token = try ProviderToken(configuration: configuration, clock: SystemClock())
        let loop = EventLoop.start(name: "apns-demo")
        defer { loop.stopAndWait() }
        let apns = try APNsConnections(configuration: configuration, providerToken: token,
                                       options: .init(pushConnections: 1, tls: TLSConfiguration(caFile: certificates.caFile)),
                                       loop: loop)
        let client = apns.client

        let channel = try await client.createChannel(policy: .noStorage)
        say("created broadcast channel \(channel) (no message stored: the policy for live scores)")
        let listed = try await client.listChannels()
        say("APNs lists \(listed.count) channel(s) for \(bundleID)")

        let now = SystemClock().now()
        let score = JSONValue.object([.init("home", .integer(1)), .init("away", .integer(0)),
                                        .init("clock", .integer(720)), .init("lastEvent", .string("Goal - Home"))])
        let update = LiveActivityPayload(timestamp: now, event: .update, contentState: score, staleDate: now + .seconds(900),
                                         relevanceScore: 100, alert: LiveActivityAlert(title: "Goal!", body: "Home 1-0 Away", sound: "default"))
        let published = try await client.broadcast(Broadcast(channelID: channel, payload: update.encoded(), priority: .immediate))
        say("broadcast a goal at priority 10: HTTP \(published.status), apns-unique-id \(published.uniqueID ?? "-")")

        let deviceToken = String(repeating: "0a1b2c3d", count: 8)
        let start = LiveActivityPayload(timestamp: now, event: .start, contentState: score,
                                        alert: LiveActivityAlert(title: "Kick-off", body: "HOM v AWY has started"),
                                        attributesType: "MatchAttributes",
                                        attributes: .object([.init("matchId", .string("m-1")), .init("home", .string("HOM")),
                                                             .init("away", .string("AWY"))]),
                                        inputPushChannel: channel)
        let started = try await client.send(LiveActivityPush(deviceToken: deviceToken, payload: start.encoded(), priority: .immediate))
        say("push-to-start to token \(deviceToken.prefix(8))… subscribing it to the channel: HTTP \(started.status)")

        do {
            _ = try await client.send(LiveActivityPush(deviceToken: uninstalledToken, payload: update.encoded(), priority: .powerConsiderate))
            say("unexpected: the uninstalled token was accepted")
        } catch {
            say("push to uninstalled token \(uninstalledToken.prefix(8))…: \(error.status.map(String.init) ?? "-") \(error.reason?.name ?? "") -> \(error.disposition)")
        }

        _ = try await client.deleteChannel(channel)
        say("deleted channel \(channel)")
        do {
            _ = try await client.broadcast(Broadcast(channelID: channel, payload: update.encoded(), priority: .powerConsiderate))
            say("unexpected: a deleted channel accepted a broadcast")
        } catch {
            say("broadcast to the deleted channel: \(error.status.map(String.init) ?? "-") \(error.reason?.name ?? "") -> \(error.disposition)")
        }

        await apns.shutdown()
        say("mock APNs answers:\n\(mock.counters())")
    }

    private static func say(_ line: String) { print("• " + line) }
}
