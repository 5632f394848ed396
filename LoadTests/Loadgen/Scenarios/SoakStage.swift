import APNsMock
import Foundation
import LoadKit

/// What a soak run plays against: the mock APNs, the gateway's disk and the gateway.
///
/// The mock runs inside the load generator (the `MockAPNs` library), not as a process of its
/// own: it must outlive every kill of the gateway anyway, and in-process it can tell what no
/// arrival report says: which device token got how many pushes (so a job's tokens can be checked
/// one by one), the live channels at any moment, and answers by endpoint and status. Every
/// request is recorded; a run whose requests outgrow the recording fails its checks.
final class SoakStage {
    let directory: String
    let mock: MockAPNsServer
    let disk: DiskFault
    let gateway: RestartableGateway
    /// Where the gateway's output of every start goes.
    let transcript: String
    static let recordingCapacity = 2_000_000

    init(options: Soak.Options, settings: LoadSettings) throws {
        directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let key = try MockAPNsProviderKeyFiles.generate(keyID: LoadIdentity.keyID, in: directory)
        let certificates = try MockAPNsDevelopmentCertificates.generate(in: directory + "/tls")
        var faults = MockAPNsConfiguration.Faults()
        faults.latency = .milliseconds(options.apnsLatencyMilliseconds)
        mock = try MockAPNsServer(configuration: MockAPNsConfiguration(
            bundleID: LoadIdentity.bundleID, teamID: LoadIdentity.teamID, keys: [.init(keyID: LoadIdentity.keyID, path: key.publicKeyFile)],
            certificateFile: certificates.certificateFile, privateKeyFile: certificates.privateKeyFile, threads: 2,
            recordingCapacity: Self.recordingCapacity, diagnosticHeader: true, faults: faults))
        let addresses = try mock.start()
        disk = try DiskFault(options.diskFault, under: directory, bytes: options.diskBytes)
        transcript = directory + "/gateway.log"
        let deadlines = options.deadlines
        // A connection that never sends a byte is cut by whichever of the idle and first-request
        // deadlines comes first: both are the idle deadline here.
        let http = #"{"headTimeoutMilliseconds":\#(Int(deadlines.head * 1000)),"bodyTimeoutMilliseconds":\#(Int(deadlines.body * 1000)),"#
            + #""idleTimeoutMilliseconds":\#(Int(deadlines.idle * 1000)),"firstRequestTimeoutMilliseconds":\#(Int(deadlines.idle * 1000))}"#
        let personal = #"{"maxInFlight":\#(options.personalInFlight),"saveIntervalMilliseconds":100}"#
        gateway = try RestartableGateway(.init(
            directory: directory, dataDirectory: disk.dataDirectory, key: key, pushPort: addresses.pushPort,
            managementPort: addresses.managementPort, caFile: certificates.caFile,
            extraArguments: (settings.gatewayConfig.map { ["--config", $0] } ?? []) + ["--http", http, "--personal-queue", personal],
            environment: disk.environment, executable: settings.gatewayBinary, transcript: transcript))
    }

    /// Lines of the gateway's output containing `text`, over every start.
    func transcriptLines(containing text: String) -> Int {
        guard let output = try? String(contentsOfFile: transcript, encoding: .utf8) else { return 0 }
        return output.split(separator: "\n").count { $0.contains(text) }
    }

    /// Stops the gateway and the mock and frees the disk; removes the stage's files unless
    /// `keeping` (a failed run keeps the gateway's transcript for whoever looks into it).
    func tearDown(keeping: Bool) {
        gateway.stop()
        mock.stop()
        disk.release()
        if !keeping { try? FileManager.default.removeItem(atPath: directory) }
    }
}
