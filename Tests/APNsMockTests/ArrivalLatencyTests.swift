@testable import APNsMock
import Measurements
import Testing
import TestSlots
import TouchlineCore

/// The arrival report: answers by status per endpoint, accepted pushes per endpoint and priority
/// over time, and with `--arrival-latency FIELD` the latency of accepted pushes carrying the
/// sender's time; merged over the worker loops and started afresh by each report. The payload
/// rules stay as strict.
@Suite struct ArrivalLatencyTests {
    static func update(sentAt: Int64) -> [UInt8] {
        Sample.json(#"{"aps":{"timestamp":1767290400,"event":"update","content-state":{"home":1,"sentAt":\#(sentAt)}}}"#)
    }

    static func statusTotal(_ endpoint: ArrivalReport.Endpoint?) -> Int {
        endpoint?.statuses.values.reduce(0, +) ?? 0
    }

    @Test(.heavy) func acceptedPushesAreCountedAndMeasuredPerEndpointAndPriorityOverAllWorkers() throws {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration()
        configuration.arrivalLatencyField = "sentAt"
        configuration.threads = 2
        let mock = try RunningMock(configuration, fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        let token = try fixture.token()
        let fiftyMillisecondsAgo = SystemClock().now().nanoseconds - 50_000_000
        let broadcast = { (priority: String, channel: String) in
            mock.push(BroadcastTests.path, headers: Sample.broadcastHeaders(token: token, channel: channel).filter { $0.0 != "apns-priority" }
                      + [("apns-priority", priority)], body: Self.update(sentAt: fiftyMillisecondsAgo))
        }
        // One connection each: the server deals them to its two worker loops.
        let first = try mock.send([
            broadcast("10", channel), broadcast("10", channel),
            // Refused (no such channel): an answer, not an arrival.
            broadcast("10", "bm8tc3VjaC1jaGFubmVs"),
            mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: token), body: Sample.update),
        ])
        let second = try mock.send([broadcast("5", channel)])
        #expect((first + second).map { $0.status == 200 } == [true, true, false, true, true], "\((first + second).map(\.status))")

        let report = mock.server.takeArrivalReport()
        #expect(report.endpoints.map(\.name) == ["broadcast", "device"])
        let broadcasts = try #require(report.endpoint("broadcast"))
        #expect(broadcasts.statuses["200"] == 3 && Self.statusTotal(broadcasts) == 4, "\(broadcasts.statuses)")
        #expect(broadcasts.streams.map(\.priority) == [5, 10])
        #expect(broadcasts.streams.map(\.arrivals.total) == [1, 2])
        #expect(broadcasts.streams.map(\.latency.count) == [1, 2])
        let latency = report.latency(endpoint: "broadcast")
        #expect(latency.count == 3)
        #expect(latency.min >= 50_000_000 && latency.max < 60_000_000_000, "\(latency.summary)")
        #expect(report.latency(endpoint: "broadcast", priority: 10).count == 2)
        #expect(report.arrivals(endpoint: "broadcast").total == 3)
        #expect(report.period.startNanoseconds <= report.endNanoseconds)
        #expect(report.arrivals(endpoint: "broadcast").counts.count
                <= report.period.interval(at: report.endNanoseconds) + 1, "arrivals lie inside the period")

        let device = try #require(report.endpoint("device"))
        #expect(device.statuses == ["200": 1])
        #expect(device.streams.map(\.priority) == [10], "a device push without apns-priority is sent at 10")
        #expect(device.streams.map(\.latency.count) == [0], "the field is looked for, never required")

        let next = mock.server.takeArrivalReport()
        #expect(next.endpoints.isEmpty, "a report starts the next period afresh")
        #expect(next.period.startNanoseconds == report.endNanoseconds)
    }

    @Test(.heavy) func withoutTheFieldArrivalsAndStatusesAreStillCounted() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        let token = try fixture.token()
        let response = try mock.send(mock.push(BroadcastTests.path, headers: Sample.broadcastHeaders(token: token, channel: channel),
                                               body: Self.update(sentAt: 1)))
        #expect(response.status == 200)
        let report = mock.server.takeArrivalReport()
        #expect(report.arrivals(endpoint: "broadcast", priority: 10).total == 1)
        #expect(report.latency(endpoint: "broadcast").count == 0)
    }

    @Test(.heavy) func theReportIsPrintedAsOneJSONLineAndReadBack() throws {
        var tally = MockAPNsArrivalTally(period: MeasurementPeriod(startNanoseconds: 1_000))
        tally.record(endpoint: .broadcast, status: 200, priority: 5, sentAt: 500, at: 2_000)
        tally.record(endpoint: .device, status: 410, priority: nil, sentAt: nil, at: 3_000)
        let report = tally.report(endNanoseconds: 4_000)
        let lines = report.printed.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix(ArrivalReport.linePrefix) == true)
        #expect(lines.last.map(String.init) == ArrivalReport.endMarker)
        #expect(try ArrivalReport(output: "push port 1\n" + report.printed + "\n") == report)
        #expect(throws: ArrivalReportError.self) { try ArrivalReport(output: "arrival report: {\"period\":1}\n") }
    }

    @Test func workerTalliesMergeIntoWhatOneWouldHaveCounted() {
        let period = MeasurementPeriod(startNanoseconds: 0)
        var (one, two, all) = (MockAPNsArrivalTally(period: period), MockAPNsArrivalTally(period: period), MockAPNsArrivalTally(period: period))
        let answers: [(MockAPNsEndpoint, Int, Int?, Int64?, Int64)] = [
            (.broadcast, 200, 10, 100, 1_000_000_000), (.broadcast, 200, 10, nil, 1_500_000_000), (.broadcast, 429, nil, nil, 1_600_000_000),
            (.device, 200, 5, 7, 2_100_000_000), (.createChannel, 201, nil, nil, 10), (.device, 410, nil, nil, 3_000_000_000),
        ]
        for (index, answer) in answers.enumerated() {
            all.record(endpoint: answer.0, status: answer.1, priority: answer.2, sentAt: answer.3, at: answer.4)
            if index.isMultiple(of: 2) {
                one.record(endpoint: answer.0, status: answer.1, priority: answer.2, sentAt: answer.3, at: answer.4)
            } else {
                two.record(endpoint: answer.0, status: answer.1, priority: answer.2, sentAt: answer.3, at: answer.4)
            }
        }
        one.merge(two)
        let report = one.report(endNanoseconds: 4_000_000_000)
        #expect(report == all.report(endNanoseconds: 4_000_000_000))
        #expect(report.endpoints.map(\.name) == ["broadcast", "createChannel", "device"])
        #expect(report.endpoint("broadcast")?.statuses == ["200": 2, "429": 1])
        #expect(report.arrivals(endpoint: "broadcast").counts == [0, 2])
        #expect(report.endpoint("createChannel")?.streams.map(\.priority) == [nil])
        #expect(report.count(endpoint: "device", status: 410) == 1)
        #expect(report.latency(endpoint: "device").max == 2_100_000_000 - 7)
    }

    @Test func theFieldIsReadAsDigitsRightAfterItsName() {
        let needle = Array(#""sentAt":"#.utf8)
        #expect(MockAPNsTimestampField.number(after: needle, in: Array(#"{"a":{"sentAt":1234567,"b":2}}"#.utf8)) == 1_234_567)
        #expect(MockAPNsTimestampField.number(after: needle, in: Array(#"{"sentAt":"12"}"#.utf8)) == nil)
        #expect(MockAPNsTimestampField.number(after: needle, in: Array(#"{"sentAtX":12}"#.utf8)) == nil)
        #expect(MockAPNsTimestampField.number(after: needle, in: Array(#"{"sentAt":1780000000123456789}"#.utf8)) == 1_780_000_000_123_456_789)
        #expect(MockAPNsTimestampField.number(after: needle, in: Array(#"{"sentAt":9223372036854775807}"#.utf8)) == .max)
        #expect(MockAPNsTimestampField.number(after: needle, in: Array(#"{"sentAt":9223372036854775808}"#.utf8)) == nil)
        #expect(MockAPNsTimestampField.number(after: needle, in: Array(#"{"sentAt":99999999999999999999}"#.utf8)) == nil)
        #expect(MockAPNsTimestampField.number(after: needle, in: Array(#"{"sentAt":"#.utf8)) == nil)
        #expect(MockAPNsTimestampField.number(after: needle, in: []) == nil)
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
