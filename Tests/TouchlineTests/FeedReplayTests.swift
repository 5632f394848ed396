import Foundation
import Testing
@testable import Touchline
@testable import TouchlineChannels
import TouchlineCore

/// `touchline replay`'s core: a recorded feed read line by line (each problem naming its line),
/// and run through the real reducer and engine in virtual time, where the pacing's guarantees
/// show exactly.
@Suite struct FeedReplayTests {
    static let start = UnixTime(seconds: 1_767_290_400)
    static let header = #"{"touchlineFeed": 1, "channel": "m-1", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes.replacingOccurrences(of: "\n", with: "")), "createdAt": "2026-01-01T18:00:00.000Z"}"#

    static func line(_ seconds: Double, _ event: String) -> String {
        #"{"receivedAt": "\#(RecordedFeed.timestamp(start + .milliseconds(Int64(seconds * 1000))))", "event": \#(event)}"#
    }

    /// Ten minutes of a match: kickoff, a clock reading and a stats update every second (low
    /// importance), a goal at 5:00.5, full time and the end.
    static func match() -> String {
        var lines = [header, line(1, #"{"seq": 1, "type": "status", "status": "live"}"#)]
        var seq: Int64 = 1
        for second in 2..<600 {
            seq += 1
            if second == 300 {
                lines.append(line(300.5, #"{"seq": \#(seq), "type": "goal", "team": "home", "player": "Saka", "minute": 5}"#))
                continue
            }
            let event = second % 2 == 0 ? #"{"seq": \#(seq), "type": "clock", "clockSeconds": \#(second)}"#
                : #"{"seq": \#(seq), "type": "stats", "homeShots": \#(second % 40)}"#
            lines.append(line(Double(second), event))
        }
        lines.append(line(600, #"{"seq": \#(seq + 1), "type": "status", "status": "finished"}"#))
        lines.append(#"{"receivedAt": "\#(RecordedFeed.timestamp(start + .seconds(601)))", "end": {}}"#)
        return lines.joined(separator: "\n") + "\n"
    }

    static func feed(_ text: String) throws -> RecordedFeed { try RecordedFeed(jsonLines: Array(text.utf8)) }

    static func replay(_ text: String, policy: ChannelPolicy = .default) throws -> FeedReplay.Result {
        try FeedReplay.run(try feed(text), settings: .init(policy: policy))
    }

    @Test func aFeedReadsBackAsItWasWritten() throws {
        let feed = try Self.feed(Self.match())
        #expect(feed.header.channelID == "m-1" && feed.header.channel.attributes?.homeCode == "ARS" && feed.header.createdAt == Self.start)
        #expect(feed.entries.count == 601)
        #expect(feed.entries.first?.line == 2)
        #expect(try RecordedFeed(jsonLines: feed.jsonLines) == feed)
    }

    /// Feed times are written as `ISO8601DateFormatter` writes them (milliseconds, UTC), from
    /// 1970 to 2100, leap days and the ends of days and years included, and read back the same.
    @Test func timesAreWrittenAsAnRFC3339FormatterWritesThemAndReadBack() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SplitMix64(seed: 31)
        let samples: [Int64] = [0, 1, 999, 86_399_999, 951_782_399_999, 951_782_400_000, 1_709_164_800_999, 1_767_290_400_123,
                                4_102_444_799_999, 4_102_444_800_000]
            + (0..<2_000).map { _ in Int64(generator.next() % 4_102_444_800_001) }
        for milliseconds in samples {
            let time = UnixTime(nanoseconds: milliseconds * 1_000_000 + 456_789)
            let written = RecordedFeed.timestamp(time)
            #expect(written == formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000)), "\(milliseconds)")
            #expect(RecordedFeed.parseTimestamp(written) == UnixTime(nanoseconds: milliseconds * 1_000_000), "\(written)")
        }
    }

    @Test func everyMalformedLineIsNamedByItsNumber() throws {
        let event = Self.line(1, #"{"seq": 1, "type": "status", "status": "live"}"#)
        let cases: [(String, String)] = [
            ("", "line 1: the feed is empty"),
            (#"{"channel": "m-1"}"#, "line 1: field 'touchlineFeed' must be 1"),
            (Self.header + "\n" + event + "\n{not json", "line 3: the body is not valid JSON"),
            (Self.header + "\n\n" + #"{"receivedAt": "yesterday", "event": {}}"#, #"line 3: field 'receivedAt' must be an RFC 3339 time"#),
            (Self.header + "\n" + #"{"receivedAt": "2026-01-01T18:00:01Z", "event": {}, "end": {}}"#, "line 2: a line after the header holds exactly one"),
            (Self.header + "\n" + #"{"receivedAt": "2026-01-01T18:00:01Z", "event": {}, "extra": 1}"#, "line 2: unknown field 'extra'"),
            (Self.header + "\n" + #"{"receivedAt": "2026-01-01T17:59:59Z", "event": {}}"#, "line 2: receivedAt 2026-01-01T17:59:59.000Z is before"),
            (Self.header + "\n" + #"{"receivedAt": "2026-01-01T18:00:01Z", "end": {}}"# + "\n" + event, "line 3: nothing may follow the channel's end"),
            (Self.header + "\n" + #"{"receivedAt": "2026-01-01T18:00:01Z", "end": {"finalState": {"home": 1}}}"#, "line 2: end.finalState: the resulting state is not a football content-state"),
        ]
        for (text, message) in cases {
            #expect(throws: RecordedFeed.LineError.self) { try Self.feed(text) }
            do { _ = try Self.feed(text) } catch { #expect("\(error)".hasPrefix(message), "\(error) for \(text.suffix(80))") }
        }
    }

    @Test func anEventTheChannelWouldRefuseStopsTheReplayNamingItsLine() throws {
        let text = [Self.header, Self.line(1, #"{"seq": 1, "type": "status", "status": "live"}"#),
                    Self.line(2, #"{"seq": 2, "type": "dunk", "team": "home"}"#)].joined(separator: "\n")
        #expect {
            _ = try Self.replay(text)
        } throws: { error in
            "\(error)".hasPrefix("line 3: the channel refuses it: events[0].type: field 'type' must be one of")
        }
    }

    /// The default pacing in virtual time: the goal reaches APNs as soon as it is applied (the
    /// simulated answer time, 20 ms) at priority 10; the clock and stats ride on a slower
    /// cadence; the end goes with the final state. The uniform pacing of before makes the goal
    /// wait behind them and sends several times as many pushes.
    @Test func theDefaultPacingSendsTheGoalAtOnceAndFewerPushesThanUniformPacing() throws {
        let paced = try Self.replay(Self.match())
        let goal = try #require(paced.events.first { $0.importance == .critical })
        #expect(goal.delay == .milliseconds(20) && goal.priority == .immediate)
        #expect(paced.endDeliveredAt != nil && paced.pushes.last?.isEnd == true)
        #expect(paced.events.allSatisfy { !$0.changedState || $0.deliveredAt != nil }, "every change was pushed")
        #expect(paced.counters.lowImportanceDeferrals > 0)

        let uniform = try Self.replay(Self.match(), policy: ChannelPolicy.uniformPacing)
        let waited = try #require(uniform.events.first { $0.importance == .critical })
        #expect(try #require(waited.delay) > .milliseconds(20), "behind the routine pushes")
        #expect(uniform.pushes.count >= 2 * paced.pushes.count, "\(uniform.pushes.count) against \(paced.pushes.count)")
        #expect(uniform.endDeliveredAt != nil)
    }

    @Test func theSameFeedAndPolicyAlwaysGiveTheSamePushes() throws {
        let first = try Self.replay(Self.match())
        let second = try Self.replay(Self.match())
        #expect(first.pushes == second.pushes && first.events == second.events)
    }

    @Test func duplicatesAndStaleEventsAreCountedNotApplied() throws {
        let text = [Self.header, Self.line(1, #"{"seq": 2, "type": "status", "status": "live"}"#),
                    Self.line(2, #"{"seq": 2, "type": "status", "status": "live"}"#),
                    Self.line(3, #"{"seq": 1, "type": "clock", "clockSeconds": 1}"#)].joined(separator: "\n")
        let result = try Self.replay(text)
        #expect(result.events.count == 1 && result.duplicates == 1 && result.stale == 1)
    }

    /// A feed with a year's pause and an event dated 2099 costs what its few inputs cost: the
    /// simulation jumps from input to timer to answer (a handful of steps, not one per second
    /// of the seventy years), and the chart keeps its bucket count, each bucket wider.
    @Test func aReplayCostsItsInputsNotTheTimeItsFeedCovers() throws {
        func at(_ text: String, _ event: String) -> String { #"{"receivedAt": "\#(text)", "event": \#(event)}"# }
        let text = [Self.header, Self.line(1, #"{"seq": 1, "type": "status", "status": "live"}"#),
                    at("2027-01-01T18:00:00.000Z", #"{"seq": 2, "type": "goal", "team": "home", "player": "Saka", "minute": 5}"#),
                    at("2099-06-01T12:00:00.000Z", #"{"seq": 3, "type": "goal", "team": "away", "player": "Palmer", "minute": 6}"#),
                    #"{"receivedAt": "2099-06-01T12:00:01.000Z", "end": {}}"#].joined(separator: "\n")
        let result = try Self.replay(text)
        #expect(result.events.count == 3 && result.endDeliveredAt != nil)
        #expect(result.pushes.count <= 8, "\(result.pushes.count) pushes")
        #expect(result.steps <= 30, "\(result.steps) steps for 4 inputs and \(result.pushes.count) pushes")
        let report = ReplayReport(result: result)
        #expect(report.buckets.count <= ReplayReport.maximumBuckets && report.buckets.count > ReplayReport.maximumBuckets / 2,
                "\(report.buckets)")
        #expect(report.buckets.minutes > 25_000, "seventy years in buckets of \(report.buckets.minutes) minutes")
        let chart = report.chart
        #expect(chart.contains(" minutes") && !chart.contains("Per minute"), "the chart names its buckets' width")

        let match = ReplayReport(result: try Self.replay(Self.match()))
        #expect(match.buckets.minutes == 1 && (10...80).contains(match.buckets.count), "a match keeps its minutes: \(match.buckets)")
    }

    @Test func theReportSummarizesAndChartsTheReplay() throws {
        let output = try Replay.run(feed: Array(Self.match().utf8), options: .init(policyChanges: Array(#"{"burst": 2}"#.utf8)))
        #expect(output.summary.hasPrefix("replay of m-1 (football): 600 events over 10 min 1 s, APNs answering in 20 ms"), "\(output.summary)")
        #expect(output.summary.contains("\"burst\":2"), "the policy tried is shown: \(output.summary)")
        #expect(output.summary.contains("ingest→APNs  critical p50 20 ms, p99 20 ms, max 20 ms (n 2)"), "\(output.summary)")
        #expect(output.summary.contains("end          delivered at"))
        #expect(output.chart.hasPrefix("<?xml") && output.chart.contains("Replay of m-1") && output.chart.contains("time (min)"))

        #expect(throws: Replay.Failure.self) { try Replay.run(feed: Array(Self.match().utf8), options: .init(policyChanges: Array(#"{"burst": -1}"#.utf8))) }
        do { _ = try Replay.run(feed: Array(Self.match().utf8), options: .init(policyChanges: Array(#"{"bursts": 1}"#.utf8))) } catch {
            #expect(error.description.contains("bursts"), "\(error)")
        }
    }
}
