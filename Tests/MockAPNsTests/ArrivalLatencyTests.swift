@testable import MockAPNs
import Testing
import TouchlineCore

/// `--arrival-latency FIELD`: accepted pushes carrying the sender's time add latency samples,
/// reported per endpoint and forgotten on each report; the payload rules stay as strict.
@Suite struct ArrivalLatencyTests {
    static func update(sentAt: Int64) -> [UInt8] {
        Sample.json(#"{"aps":{"timestamp":1767290400,"event":"update","content-state":{"home":1,"sentAt":\#(sentAt)}}}"#)
    }

    @Test func acceptedPushesCarryingTheFieldAreMeasuredPerEndpoint() throws {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration()
        configuration.arrivalLatencyField = "sentAt"
        let mock = try RunningMock(configuration, fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        let token = try fixture.token()
        let fiftyMillisecondsAgo = SystemClock().now().nanoseconds - 50_000_000
        let responses = try mock.send([
            mock.push(BroadcastTests.path, headers: Sample.broadcastHeaders(token: token, channel: channel), body: Self.update(sentAt: fiftyMillisecondsAgo)),
            mock.push(BroadcastTests.path, headers: Sample.broadcastHeaders(token: token, channel: channel), body: Self.update(sentAt: fiftyMillisecondsAgo)),
            // Refused (no such channel): not a delivery, not a sample.
            mock.push(BroadcastTests.path, headers: Sample.broadcastHeaders(token: token, channel: "bm8tc3VjaC1jaGFubmVs"),
                      body: Self.update(sentAt: fiftyMillisecondsAgo)),
            mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: token), body: Sample.update),
        ])
        #expect(responses.map { $0.status == 200 } == [true, true, false, true], "\(responses.map(\.status))")

        let report = mock.server.takeArrivalLatencyReport()
        #expect(report.rows.map(\.endpoint) == [.broadcast])
        let row = try #require(report.rows.first)
        #expect(row.count == 2)
        #expect(row.p50 >= 50 && row.max < 60_000, "\(report)")
        #expect(report.description.hasPrefix("arrival latency broadcast: count 2, p50 "))
        #expect(report.description.hasSuffix(MockAPNsArrivalReport.endMarker))
        #expect(mock.server.takeArrivalLatencyReport().rows.isEmpty, "a report starts the next period afresh")
    }

    @Test func theFieldIsReadAsDigitsRightAfterItsName() {
        let needle = Array(#""sentAt":"#.utf8)
        #expect(MockAPNsArrivalLatency.number(after: needle, in: Array(#"{"a":{"sentAt":1234567,"b":2}}"#.utf8)) == 1_234_567)
        #expect(MockAPNsArrivalLatency.number(after: needle, in: Array(#"{"sentAt":"12"}"#.utf8)) == nil)
        #expect(MockAPNsArrivalLatency.number(after: needle, in: Array(#"{"sentAtX":12}"#.utf8)) == nil)
        #expect(MockAPNsArrivalLatency.number(after: needle, in: Array(#"{"sentAt":1780000000123456789}"#.utf8)) == 1_780_000_000_123_456_789)
        #expect(MockAPNsArrivalLatency.number(after: needle, in: Array(#"{"sentAt":99999999999999999999}"#.utf8)) == nil)
        #expect(MockAPNsArrivalLatency.number(after: needle, in: []) == nil)
    }

    @Test func theCommandLineTakesTheField() throws {
        let fixture = try TestFixture.get()
        let parsed = try MockAPNsCommandLine.parse(["--bundle-id", "b", "--team-id", "t", "--key", "K=\(fixture.key.publicKeyFile)",
                                                    "--arrival-latency", "sentAt"])
        #expect(parsed.configuration.arrivalLatencyField == "sentAt")
        #expect(throws: MockAPNsSetupError.self) {
            try MockAPNsCommandLine.parse(["--bundle-id", "b", "--team-id", "t", "--key", "K=\(fixture.key.publicKeyFile)",
                                           "--arrival-latency", #"a"b"#])
        }
    }
}
