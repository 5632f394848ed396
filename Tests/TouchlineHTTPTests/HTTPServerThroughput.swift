import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime

/// Requests per second over keep-alive, measured with wrk; printed, never asserted.
/// Runs only when TOUCHLINE_HTTP_BENCH=1 and wrk is installed.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["TOUCHLINE_HTTP_BENCH"] == "1"
                && FileManager.default.isExecutableFile(atPath: "/usr/bin/wrk")))
struct HTTPServerThroughput {
    @Test(arguments: [("small GET", 0), ("10 KB POST (a batch of 100 events)", 10_000)])
    func keepAliveRequestsPerSecond(label: String, bodySize: Int) throws {
        var router = HTTPRouter()
        router.add(.get, "/v1/channels/{id}") { request, parameters in
            request.respond(.json(status: 200, ["id": .string(parameters["id"] ?? "")]))
        }
        router.add(.post, "/v1/channels/{id}/events") { request, _ in
            do throws(HTTPError) {
                _ = try request.bearerToken()
                request.respond(.json(status: 202, ["accepted": .integer(Int64(request.body.count))]))
            } catch {
                request.respond(error.response)
            }
        }
        let fixture = try ServerFixture(router: router)
        defer { fixture.stop() }

        let script = FileManager.default.temporaryDirectory.appendingPathComponent("http-bench-\(UUID()).lua")
        let lua = bodySize == 0 ? "wrk.path = \"/v1/channels/m1\"\n" : """
            wrk.method = "POST"
            wrk.path = "/v1/channels/m1/events"
            wrk.headers["Authorization"] = "Bearer bench"
            wrk.headers["Content-Type"] = "application/json"
            wrk.body = string.rep("x", \(bodySize))
            """
        try lua.write(to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/wrk")
        process.arguments = ["-t1", "-c32", "-d3s", "-s", script.path, "http://127.0.0.1:\(fixture.port)/"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let report = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        print("HTTP server, \(label), 32 keep-alive connections, 1 wrk thread:\n\(report)")
        #expect(process.terminationStatus == 0)
    }
}
