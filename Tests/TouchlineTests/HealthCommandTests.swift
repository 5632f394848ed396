import APNsMock
import Foundation
import Testing

/// `touchline health`, the container health check: 0 for a live gateway's `/healthz`, 1 with
/// the reason for anything else.
@Suite("touchline health")
struct HealthCommandTests {
    static func health(_ arguments: [String]) throws -> (status: Int32, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServeProcess.executable)
        process.arguments = ["health"] + arguments
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func passesForALiveGatewayAndFailsOtherwiseNamingTheReason() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gateway = try ServeProcess(dataDirectory: directory)
        let base = "http://127.0.0.1:\(gateway.port)"

        #expect(try Self.health([base + "/healthz"]).status == 0)
        let unauthorized = try Self.health([base + "/v1/channels"])
        #expect(unauthorized.status == 1)
        #expect(unauthorized.errors.contains("answered 401"), "\(unauthorized.errors)")
        #expect(gateway.terminate() == 0)

        let stopped = try Self.health([base + "/healthz"])
        #expect(stopped.status == 1)
        #expect(stopped.errors.contains("cannot connect to 127.0.0.1:\(gateway.port)"), "\(stopped.errors)")
        let wrongScheme = try Self.health(["https://127.0.0.1:1/healthz"])
        #expect(wrongScheme.status == 1)
        #expect(wrongScheme.errors.contains("only http:// URLs"), "\(wrongScheme.errors)")
    }
}
