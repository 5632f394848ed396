import ChildProcesses
import APNsMock
import Foundation
import Testing
import TestSlots

/// `touchline serve --check-config` and the command line's misuse rules, as operators meet them:
/// the real executables, their output and exit status.
@Suite(.heavy) struct ServeCheckConfigTests {
    /// `touchline` with `arguments`, in an environment of its own (`PATH` and `environment`).
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        try await ServeProcess.runToEnd(arguments, environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 })
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func aConfigurationThatWouldStartIsPrintedWithSourcesAndNoSecrets() async throws {
        let files = try ConfigurationFiles()
        let dataDirectory = files.directory + "/data"
        let webhookSecret = "whsec-0123456789abcdef-never-shown"
        let file = try files.write("touchline.json", """
            {"listen": "127.0.0.1:0", "apns": {"keyID": "\(ConfigurationFiles.keyID)"},
             "webhooks": {"endpoints": [{"url": "http://127.0.0.1:9/hook?token=query-secret", "secret": "\(webhookSecret)", "events": ["*"]}]}}
            """)
        var environment = files.credentials
        environment["TOUCHLINE_APNS_KEY_ID"] = nil
        let (status, output) = try await Self.run(["serve", "--check-config", "--config", file, "--data-dir", dataDirectory,
                                                   "--log-level=debug"], environment: environment)
        #expect(status == 0, "\(output)")
        let lines = output.split(separator: "\n").map(String.init)
        func line(_ name: String) -> String? { lines.first { $0.hasPrefix(name + " ") } }
        #expect(line("listen")?.contains("127.0.0.1:0") == true && line("listen")?.hasSuffix("(listen in \(file))") == true, "\(output)")
        #expect(line("dataDirectory")?.hasSuffix("(flag --data-dir)") == true, "\(output)")
        #expect(line("log.level")?.contains("debug") == true && line("log.level")?.hasSuffix("(flag --log-level)") == true)
        #expect(line("apns.keyPath")?.contains(files.keyFile) == true, "key paths are shown")
        #expect(line("apns.keyPath")?.hasSuffix("(environment variable TOUCHLINE_APNS_KEY_PATH)") == true)
        #expect(line("apns.keyID")?.hasSuffix("(apns.keyID in \(file))") == true)
        #expect(line("maxBodyBytes")?.hasSuffix("(default)") == true)
        #expect(line("apiKeys[0]")?.contains("admin, key <redacted>") == true, "\(output)")
        #expect(line("apiKeys[0]")?.hasSuffix("(environment variable TOUCHLINE_ADMIN_KEY)") == true)
        for secret in [ConfigurationFiles.adminKey, webhookSecret, "query-secret"] {
            #expect(!output.contains(secret), "\(secret) is echoed: \(output)")
        }
        #expect(lines.last == "configuration OK: touchline serve would start with these settings")
        #expect(!FileManager.default.fileExists(atPath: dataDirectory), "the data directory is not created")
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func aConfigurationThatWouldNotStartGivesServesProblemsAndStatus1() async throws {
        let files = try ConfigurationFiles()
        var environment = files.credentials
        environment["TOUCHLINE_APNS_TEAM_ID"] = "TEAM1"
        let (status, output) = try await Self.run(["serve", "--check-config", "--listen", "localhost:1"], environment: environment)
        #expect(status == 1, "\(output)")
        let lines = output.split(separator: "\n")
        #expect(lines.first == "touchline serve --check-config: the gateway would not start:", "\(output)")
        #expect(lines.contains { $0.hasPrefix("APNs team id \"TEAM1\" must be 10 letters or digits") && $0.hasSuffix("(environment variable TOUCHLINE_APNS_TEAM_ID)") })
        #expect(lines.contains { $0.hasPrefix("listen address \"localhost\" must be a numeric") && $0.hasSuffix("(flag --listen)") })
        #expect(lines.count == 3, "\(output)")
        #expect(!output.contains(ConfigurationFiles.adminKey))
        // serve itself gives the same lines under its own heading.
        let (serveStatus, serveOutput) = try await Self.run(["serve", "--listen", "localhost:1"], environment: environment)
        #expect(serveStatus == 64)
        #expect(Array(serveOutput.split(separator: "\n").dropFirst()) == Array(lines.dropFirst()), "\(serveOutput)")
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func developmentModeSaysTheKeyWillBeGenerated() async throws {
        let (status, output) = try await Self.run(["serve", "--check-config"], environment: ["TOUCHLINE_DEV": "1"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("an admin key is generated and printed at start (development mode)"))
        #expect(output.contains("(environment variable TOUCHLINE_DEV)"))
        #expect(!output.contains("generated development admin key"), "nothing is started")
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"), arguments: [
        (["srve"], "touchline: unknown command 'srve' (did you mean serve?)"),
        (["serve", "--apns-teamid", "TEAM123456"], "touchline serve: unknown option --apns-teamid (did you mean --apns-team-id?)"),
        (["serve", "--check-config", "--listen"], "touchline serve: --listen needs a value: --listen ADDRESS:PORT"),
        (["serve", "--check-config=yes"], "touchline serve: --check-config takes no value"),
        (["health", "a", "b"], "touchline health: unexpected argument 'b' (see touchline health --help)"),
        (["demo", "--fast"], "touchline demo: unknown option --fast (see touchline demo --help)"),
        (["help", "srve"], "touchline help: unknown command 'srve' (did you mean serve?)"),
    ])
    func misuseIsOneLineAndStatus64(_ arguments: [String], line: String) async throws {
        let (status, output) = try await Self.run(arguments)
        #expect(status == 64)
        #expect(output == line + "\n")
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func theHelpOfEachCommandComesFromItsDeclaration() async throws {
        let (status, help) = try await Self.run(["help", "serve"])
        #expect(status == 0)
        #expect(help.hasPrefix("usage: touchline serve [options]\n"), "\(help)")
        for flag in ["--check-config", "--listen ADDRESS:PORT", "--api-key KEY=PREFIX", "--help, -h"] { #expect(help.contains("  " + flag), "\(flag)") }
        #expect(try await Self.run(["serve", "--help"]).output == help)
        let root = try await Self.run([]).output
        for command in ["serve", "demo", "health", "apns-demo", "version", "help"] { #expect(root.contains("\n  \(command) "), "\(command)") }
    }

    static let mock = URL(fileURLWithPath: ServeProcess.executable).deletingLastPathComponent().appendingPathComponent("touchline-mock-apns").path

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: mock), "needs the touchline-mock-apns executable"))
    func theMockSaysWhatIsWrongInOneLineWithStatus64() throws {
        let child = try ChildProcess(Self.mock, ["--bundle-id", "b", "--team-id", "t", "--key", "K=/dev/null", "--push-prot", "0"],
                                     output: .null, errors: .pipe)
        let text = String(decoding: child.errors!.readToEnd(), as: UTF8.self)
        #expect(child.wait() == .exited(64))
        #expect(text == "touchline-mock-apns: unknown option --push-prot (did you mean --push-port?)\n")
    }
}
