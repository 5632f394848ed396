import Foundation
import Testing
import TestSlots

/// deploy/touchline.service is a unit systemd accepts without a single warning, and its
/// sandboxing keeps systemd's own exposure score low.
@Suite("systemd unit")
struct SystemdUnitTests {
    /// The unit with `ExecStart` pointing at the built binary (verify requires it to exist), in a
    /// private directory under the unit's own name.
    static func unitCopy() throws -> (directory: String, unit: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-unit-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let text = try DeployTool.read("deploy/touchline.service")
        #expect(text.contains("ExecStart=/usr/local/bin/touchline serve"))
        let unit = directory + "/touchline.service"
        try text.replacingOccurrences(of: "ExecStart=/usr/local/bin/touchline", with: "ExecStart=" + DeployTool.touchline)
            .write(toFile: unit, atomically: true, encoding: .utf8)
        return (directory, unit)
    }

    @Test(.heavy, .enabled(if: DeployTool.exists("systemd-analyze"), "systemd-analyze (Debian systemd) is not installed"),
          .enabled(if: FileManager.default.isExecutableFile(atPath: DeployTool.touchline), "needs the touchline executable"))
    func systemdVerifiesTheUnitWithoutWarnings() async throws {
        let (directory, unit) = try Self.unitCopy()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let verified = try await DeployTool.run("systemd-analyze", ["verify", unit])
        #expect(verified.status == 0, "\(verified.output)")
        // Unknown keys and bad values are only warnings for verify: none may appear.
        #expect(verified.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(verified.output)")
    }

    @Test(.heavy, .enabled(if: DeployTool.exists("systemd-analyze"), "systemd-analyze (Debian systemd) is not installed"),
          .enabled(if: FileManager.default.isExecutableFile(atPath: DeployTool.touchline), "needs the touchline executable"))
    func theSandboxKeepsTheExposureScoreLow() async throws {
        let (directory, unit) = try Self.unitCopy()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let security = try await DeployTool.run("systemd-analyze", ["security", "--offline=yes", "--no-pager", unit])
        let match = try #require(security.output.firstMatch(of: /Overall exposure level for touchline\.service: (\d+\.\d+)/),
                                 "\(security.output.suffix(500))")
        let score = try #require(Double(match.1))
        // 0 is fully locked down, 10 is unprotected; systemd calls below 2 "OK".
        #expect(score <= 2.0, "\(security.output)")
    }

    @Test func theUnitHasTheSandboxingOperatorsExpect() throws {
        let text = try DeployTool.read("deploy/touchline.service")
        let settings = Set(text.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }.map(String.init))
        for line in ["DynamicUser=yes", "StateDirectory=touchline", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
                     "NoNewPrivileges=yes", "CapabilityBoundingSet=", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
                     "SystemCallFilter=@system-service", "KillSignal=SIGTERM", "Environment=TOUCHLINE_DATA_DIR=%S/touchline"] {
            #expect(settings.contains(line), "missing \(line)")
        }
        // The stop timeout leaves room for the gateway's bounded shutdown (about 5 s).
        let timeout = try #require(text.firstMatch(of: /TimeoutStopSec=(\d+)/).flatMap { Int($0.1) })
        #expect(timeout >= 10)
    }
}
