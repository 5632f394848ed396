import Foundation
import Testing

/// A running `touchline serve` child process and the port it printed.
struct ServeProcess {
    /// The `touchline` executable next to the test bundle (built with the package).
    static let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("touchline").path
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    let process: Process
    let port: Int

    /// Starts `touchline serve` on a free port with the admin key and `arguments` added.
    init(dataDirectory: String, arguments: [String] = []) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDirectory, "--admin-key", GatewayFixture.adminKey]
            + arguments
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

    var admin: GatewayTestClient { GatewayTestClient(port: port, key: GatewayFixture.adminKey) }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM, then the exit status once it has stopped.
    func terminate() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
