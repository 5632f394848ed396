import Foundation
import MockAPNs
import Testing
import TouchlineCore

/// `touchline serve` killed with SIGKILL loses nothing it acknowledged.
@Suite("Gateway crash recovery")
struct GatewayCrashRecoveryTests {
    /// The `touchline` executable next to the test bundle (built with the package).
    static let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("touchline").path

    /// A running `touchline serve` and the port it printed.
    private struct Server {
        let process: Process
        let port: Int

        init(dataDirectory: String) throws {
            process = Process()
            process.executableURL = URL(fileURLWithPath: GatewayCrashRecoveryTests.executable)
            process.arguments = ["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDirectory, "--admin-key", GatewayFixture.adminKey]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            var text = ""
            while !text.contains("/v1\n") {
                let chunk = output.fileHandleForReading.availableData
                guard !chunk.isEmpty else { throw GatewayTestClient.Failure(description: "touchline serve exited: \(text)") }
                text += String(decoding: chunk, as: UTF8.self)
            }
            let address = try #require(text.split(separator: "\n").first { $0.contains("provider API on") })
            port = try #require(Int(address.split(separator: ":").last!.prefix { $0.isNumber }))
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: executable), "needs the touchline executable"))
    func acknowledgedEventsSurviveKillNine() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try Server(dataDirectory: directory)
        let api = GatewayTestClient(port: first.port, key: GatewayFixture.adminKey)
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "k9", "storagePolicy": "no-storage"}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        for seq in 1...50 {
            let posted = try api.request("POST", "/v1/channels/k9/events", json: #"{"seq": \#(seq), "patch": {"minute": \#(seq)}}"#)
            #expect(posted.status == 202)
        }
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()

        let second = try Server(dataDirectory: directory)
        let shown = try GatewayTestClient(port: second.port, key: GatewayFixture.adminKey).request("GET", "/v1/channels/k9")
        #expect(shown.status == 200)
        #expect(shown.json?.string("apnsChannelId") == apnsID)
        #expect(shown.json?.integer("lastSeq") == 50)
        #expect(shown.json?[member: "contentState"] == ["minute": 50])
        second.process.terminate()
        second.process.waitUntilExit()
        #expect(second.process.terminationStatus == 0)
    }
}
