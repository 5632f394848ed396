import APNsMock
import Testing

@Suite struct CommandLineTests {
    @Test func parsesEveryFlag() throws {
        let fixture = try TestFixture.get()
        let parsed = try MockAPNsCommandLine.parse([
            "--bundle-id", "com.example.sports", "--team-id", "TEAM123456", "--key", "KEY1234567=\(fixture.key.publicKeyFile)",
            "--key", "KEY7654321=\(fixture.strangerKey.privateKeyFile)", "--host", "::1", "--push-port", "0", "--management-port", "4431",
            "--cert", fixture.certificates.certificateFile, "--cert-key", fixture.certificates.privateKeyFile, "--threads", "3",
            "--initial-streams", "2", "--max-streams", "500", "--channel-limit", "5", "--no-detail-header",
            "--unregistered", "abcd", "--rate-429", "0.1", "--rate-500", "0.2", "--rate-503", "0.05",
            "--fault-endpoints", "device,createChannel", "--latency-ms", "15", "--goaway-after", "100", "--goaway-reason", "IdleTimeout",
            "--seed", "9", "--print-counters",
        ])
        let c = parsed.configuration
        #expect(c.bundleID == "com.example.sports" && c.teamID == "TEAM123456")
        #expect(c.keys.map(\.keyID) == ["KEY1234567", "KEY7654321"])
        #expect(c.host == "::1" && c.pushPort == 0 && c.managementPort == 4431 && c.threads == 3)
        #expect(c.certificateFile == fixture.certificates.certificateFile)
        #expect(c.initialMaxConcurrentStreams == 2 && c.maxConcurrentStreams == 500 && c.channelLimit == 5)
        #expect(!c.diagnosticHeader)
        #expect(c.faults.unregisteredTokens == ["abcd"])
        #expect(c.faults.tooManyRequestsRate == 0.1 && c.faults.internalServerErrorRate == 0.2 && c.faults.shutdownRate == 0.05)
        #expect(c.faults.rateEndpoints == [.device, .createChannel])
        #expect(c.faults.latency == .milliseconds(15))
        #expect(c.faults.goawayAfterRequests == 100 && c.faults.goawayReason == "IdleTimeout" && c.faults.seed == 9)
        #expect(c.recordingCapacity == 0)
        #expect(parsed.printCounters && !parsed.showHelp)
    }

    @Test func helpNeedsNothingElse() throws {
        #expect(try MockAPNsCommandLine.parse(["--help"]).showHelp)
        for flag in ["--bundle-id", "--key", "--rate-429", "--goaway-after", "--print-counters", "--cert-dir"] {
            #expect(MockAPNsCommandLine.usage.contains(flag))
        }
    }

    @Test(arguments: [
        (["--team-id", "T", "--key", "K=/dev/null"], "--bundle-id is required"),
        (["--bundle-id", "b", "--team-id", "T"], "--key KEYID=PATH is required"),
        (["--bundle-id", "b", "--team-id", "T", "--key", "nokeyid"], "--key takes KEYID=PATH"),
        (["--bundle-id", "b", "--team-id", "T", "--key", "K=/nonexistent/key.p8"], "cannot read /nonexistent/key.p8"),
        (["--bundle-id", "b", "--team-id", "T", "--key", "K=/dev/null", "--rate-429", "2"], "--rate-429 takes a number from 0 to 1"),
        (["--bundle-id", "b", "--team-id", "T", "--key", "K=/dev/null", "--threads", "zero"], "--threads takes a whole number"),
        (["--bundle-id", "b", "--team-id", "T", "--key", "K=/dev/null", "--cert", "/nonexistent.pem"], "--cert cannot read"),
        (["--bundle-id", "b", "--team-id", "T", "--key", "K=/dev/null", "--cert", "/dev/null"], "both a certificate file and a private key"),
        (["--bundle-id", "b", "--team-id", "T", "--key", "K=/dev/null", "--fault-endpoints", "device,nowhere"], "unknown endpoint nowhere"),
        (["--bundle-id", "b", "--team-id", "T", "--key", "K=/dev/null", "--rate-429", "0.6", "--rate-500", "0.6"], "add up to more than 1"),
        (["--bundle-id"], "--bundle-id needs a value"),
        (["--verbose"], "unknown option --verbose"),
    ])
    func badFlagsGiveOneClearError(_ arguments: [String], message: String) {
        let error = #expect(throws: MockAPNsSetupError.self) { try MockAPNsCommandLine.parse(arguments) }
        #expect(error?.description.contains(message) == true, "\(String(describing: error))")
        #expect(error?.description.contains("\n") == false)
    }
}
