import TouchlineChannels
import APNsMock
import Foundation
import TouchlineConfiguration

/// The mock APNs the gateway starts in-process when no Apple credentials are configured, so a
/// new user sees pushes happen without an Apple account.
///
/// Its development CA, TLS certificate and `.p8` signing key are generated in
/// `<data directory>/mock-apns/` at every start; the mock keeps its channels in
/// `mock-apns/channels.json` there, so a restarted gateway finds its channels still registered.
enum BundledMockAPNs {
    static let bundleID = "com.example.touchline"
    static let keyID = "MOCKKEY001"
    static let teamID = "MOCKTEAM01"

    /// Starts the mock on loopback and returns it with the APNs settings that point at it.
    static func start(dataDirectory: String) throws -> (MockAPNsServer, GatewayConfiguration.APNsSettings) {
        let directory = dataDirectory + "/mock-apns"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw GatewayError.dataDirectory(path: directory, cause: "\(error.localizedDescription)")
        }
        let key = try MockAPNsProviderKeyFiles.generate(keyID: keyID, in: directory)
        let certificates = try MockAPNsDevelopmentCertificates.generate(in: directory)
        var configuration = MockAPNsConfiguration(bundleID: bundleID, teamID: teamID,
                                                  keys: [.init(keyID: keyID, path: key.publicKeyFile)],
                                                  certificateFile: certificates.certificateFile,
                                                  privateKeyFile: certificates.privateKeyFile, host: "127.0.0.1")
        configuration.channelsFile = directory + "/channels.json"
        // As strict as it can be: a start stamped an hour away from when it is sent is refused.
        configuration.startTimestampTolerance = .seconds(3600)
        let mock = try MockAPNsServer(configuration: configuration)
        let addresses = try mock.start()
        let settings = GatewayConfiguration.APNsSettings(
            keyPath: key.privateKeyFile, keyID: keyID, teamID: teamID, bundleID: bundleID,
            environment: .custom(pushHost: "localhost", pushPort: addresses.pushPort,
                                 managementHost: "localhost", managementPort: addresses.managementPort),
            caFile: certificates.caFile)
        return (mock, settings)
    }
}
