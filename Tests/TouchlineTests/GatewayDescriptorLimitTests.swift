import ChildProcesses
import APNsMock
import Foundation
import Testing
import TestSlots

/// `touchline serve` at its open-file limit: it stops accepting for a while instead of retrying
/// `accept()` on every turn of its loop, says so in its JSON log a few times (not libevent's
/// plain text, not once per retry), and serves again once descriptors are free.
@Suite("Gateway at the descriptor limit", .heavy)
struct GatewayDescriptorLimitTests {
    static let limit = 200

    private func openDescriptors(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    /// User plus system CPU time of `pid`, in seconds.
    private func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The fields after the command name, which is in parentheses and may contain spaces.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let ticks = try #require(Double(fields[11])) + (try #require(Double(fields[12])))
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test(.enabled(if: ServeProcess.isAvailable && FileManager.default.isExecutableFile(atPath: ServeProcess.prlimit),
                   "needs the touchline executable and prlimit"))
    func acceptingPausesAtTheLimitInsteadOfSpinning() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let serve = try await ServeProcess(dataDirectory: directory, descriptorLimit: Self.limit)
        defer { _ = serve.terminate() }
        let pid = serve.process.pid
        #expect(try serve.admin.request("GET", "/healthz").status == 200)

        // More keep-alive clients than descriptors are left; the rest wait in the backlog.
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n".utf8)
        let flooding = ContinuousClock.now
        for _ in 0..<(Self.limit + 50 - openDescriptors(pid)) {
            let fd = try LoopbackSocket.connect(port: serve.port)
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            clients.append(fd)
        }
        try await eventually("the gateway at its descriptor limit") { openDescriptors(pid) >= Self.limit - 1 }

        let before = try cpuSeconds(pid)
        try await Task.sleep(for: .seconds(2))
        let busy = try cpuSeconds(pid) - before
        // A loop retrying accept() spins a whole CPU: about 2 s of CPU in these 2 s.
        #expect(busy < 0.5, "the gateway used \(busy) s of CPU in 2 s at its descriptor limit")

        let lines = serve.logLines
        for line in lines {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "not a JSON object: \(line)")
        }
        #expect(lines.contains { $0.contains("accept() failed: Too many open files") }, "\(lines.suffix(5))")
        // At most a line a second (however long a loaded machine made this test), where a retry
        // on every turn would log thousands.
        let seconds = Int((ContinuousClock.now - flooding).components.seconds) + 1
        #expect(lines.filter { $0.contains("accept() failed") }.count <= seconds, "\(lines.count) lines in \(seconds) s")

        clients.forEach { close($0) }
        clients = []
        try await eventually("a new connection is served again") { (try? serve.admin.request("GET", "/healthz").status) == 200 }
    }
}
