import ChildProcesses
import APNsMock
import Foundation
import Testing
import TestSlots

/// `touchline health`, the container health check: 0 for a live gateway's `/healthz`, 1 with
/// the reason for anything else.
@Suite("touchline health", .heavy)
struct HealthCommandTests {
    static func health(_ arguments: [String]) throws -> (status: Int32, errors: String) {
        let child = try ChildProcess(ServeProcess.executable, ["health"] + arguments, output: .null, errors: .pipe)
        let text = String(decoding: child.errors!.readToEnd(), as: UTF8.self)
        return (child.wait().status, text)
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func passesForALiveGatewayAndFailsOtherwiseNamingTheReason() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gateway = try await ServeProcess(dataDirectory: directory)
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
