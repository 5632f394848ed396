import Foundation
import Measurements
import TouchlineCore

/// How a replay's result reads: a summary for the terminal and a chart over the match.
struct ReplayReport {
    let result: FeedReplay.Result

    /// Changed events that no push carried (the replay stopped first, or the state changed
    /// back to what the devices had).
    var undelivered: Int { result.events.filter { $0.changedState && $0.deliveredAt == nil }.count }
    var critical: [FeedReplay.Event] { result.events.filter { $0.importance == .critical } }

    // MARK: Summary

    /// A few lines: the feed, the pushes by priority, coalescing, delays, budget and the end.
    var summary: String {
        let header = result.header
        let pushes = result.pushes
        let immediate = pushes.filter { $0.priority == .immediate }.count
        let changed = result.events.filter(\.changedState).count
        let counters = result.counters
        let span = (result.lastInputAt ?? header.createdAt) - header.createdAt
        var lines = [
            "replay of \(header.channelID) (\(header.channel.attributes?.sport.rawValue ?? "merge patches")): \(Self.grouped(result.events.count)) events "
                + "over \(Self.span(span)), APNs answering in \(Self.milliseconds(result.settings.apnsLatency.inSeconds * 1000)) ms",
            "  policy       \(String(decoding: result.settings.policy.json.encoded, as: UTF8.self))",
            "  events       \(Self.grouped(changed)) changed the state, \(Self.grouped(result.events.count - changed)) did not; "
                + "\(Self.grouped(result.duplicates)) duplicates, \(Self.grouped(result.stale)) stale; \(Self.grouped(critical.count)) critical",
            "  pushes       \(Self.grouped(pushes.count)): \(Self.grouped(immediate)) at priority 10, \(Self.grouped(pushes.count - immediate)) at priority 5 "
                + "(\(Self.grouped(counters.reservedPushes)) on the critical reserve)",
            "  coalescing   \(pushes.isEmpty ? "n/a" : ReportNumbers.fixed(Double(changed) / Double(pushes.count))) changed events per push; "
                + "\(Self.grouped(counters.coalesced)) pending states replaced, \(Self.grouped(counters.lowImportanceDeferrals)) held for the low cadence",
            "  ingest→APNs  critical \(Self.latencies(of: .critical, in: result.events))",
            "               normal   \(Self.latencies(of: .normal, in: result.events))",
            "               low      \(Self.latencies(of: .low, in: result.events))",
            "  budget       \(Self.grouped(immediate)) priority-10 pushes, at least \(result.lowestBudgetRemaining) of "
                + "\(result.settings.policy.priorityBudgetPerHour) per hour left; \(Self.grouped(counters.budgetDowngrades)) critical pushes downgraded to priority 5",
        ]
        if let delivered = result.endDeliveredAt {
            lines.append("  end          delivered at \(RecordedFeed.timestamp(delivered))")
        } else {
            lines.append("  end          the feed does not end the channel")
        }
        if undelivered > 0 {
            lines.append("  undelivered  \(Self.grouped(undelivered)) changed events were never pushed (the replay stopped first, or the state went back)")
        }
        return lines.joined(separator: "\n")
    }

    private static func grouped(_ count: Int) -> String { ReportNumbers.grouped(Double(count)) }

    /// `0.4`, `20`, `1,020`: a tenth of a millisecond where it still shows.
    private static func milliseconds(_ value: Double) -> String {
        value < 10 ? ReportNumbers.fixed(value, decimals: 1) : ReportNumbers.grouped(value)
    }

    /// The delays of the delivered events of one importance: `p50 20 ms, p99 1,020 ms, max
    /// 30,020 ms (n 1,321)`; `none` when there are none.
    private static func latencies(of importance: Importance, in events: [FeedReplay.Event]) -> String {
        let delays = events.filter { $0.importance == importance }.compactMap(\.delay)
        guard !delays.isEmpty else { return "none" }
        var histogram = LatencyHistogram()
        for delay in delays { histogram.record(delay.inNanoseconds) }
        let summary = histogram.summary
        return "p50 \(milliseconds(summary.p50)) ms, p99 \(milliseconds(summary.p99)) ms, max \(milliseconds(summary.max)) ms (n \(grouped(delays.count)))"
    }

    /// `1 h 52 min`, `3 min 20 s`, `12 s`.
    private static func span(_ duration: Duration) -> String {
        let seconds = Int(duration.inSeconds.rounded())
        if seconds >= 3600 { return "\(seconds / 3600) h \(seconds % 3600 / 60) min" }
        if seconds >= 60 { return "\(seconds / 60) min \(seconds % 60) s" }
        return "\(seconds) s"
    }

    // MARK: Chart

    /// Buckets the chart has at most: a day of minutes. A feed that covers longer (a match
    /// recorded across a long pause, an event dated years ahead) gets wider buckets, so the
    /// chart costs the same whatever time the feed covers.
    static let maximumBuckets = 1_440

    /// The chart's buckets: whole minutes each, as few as keep them within ``maximumBuckets``
    /// from the channel's creation to the end of the replay; and how many there are.
    var buckets: (minutes: Int, count: Int) {
        let spanMinutes = max(1, Int(((result.finishedAt - result.header.createdAt).inSeconds / 60).rounded(.up)))
        let minutes = (spanMinutes + Self.maximumBuckets - 1) / Self.maximumBuckets
        return (minutes, (spanMinutes + minutes - 1) / minutes)
    }

    /// Per bucket (a minute, or more for a long feed: ``buckets``) since the channel's creation:
    /// pushes by priority and changed events in the upper panel, the longest ingest→APNs delay
    /// of the bucket's events (all and critical) in the lower one, in seconds.
    var chart: String {
        let start = result.header.createdAt
        let (width, count) = buckets
        let seconds = Double(width * 60)
        func bucket(_ time: UnixTime) -> Int { min(count - 1, max(0, Int((time - start).inSeconds / seconds))) }
        func counts(_ times: [UnixTime]) -> TimeSeries {
            var values = [Double](repeating: 0, count: count)
            for time in times { values[bucket(time)] += 1 }
            return TimeSeries(intervalSeconds: seconds, values: values)
        }
        func longest(_ events: [FeedReplay.Event]) -> TimeSeries {
            var values = [Double](repeating: .nan, count: count)
            for event in events {
                guard let delay = event.delay else { continue }
                let index = bucket(event.receivedAt)
                values[index] = values[index].isNaN ? delay.inSeconds : max(values[index], delay.inSeconds)
            }
            return TimeSeries(intervalSeconds: seconds, values: values)
        }
        let per = width == 1 ? "minute" : "\(ReportNumbers.grouped(Double(width))) minutes"
        let pushes = SVGChart.Panel(title: "Per \(per)", series: [
            .init(name: "priority-10 pushes", unit: "", timeSeries: counts(result.pushes.filter { $0.priority == .immediate }.map(\.sentAt))),
            .init(name: "priority-5 pushes", unit: "", timeSeries: counts(result.pushes.filter { $0.priority == .powerConsiderate }.map(\.sentAt))),
            .init(name: "events changing the state", unit: "", timeSeries: counts(result.events.filter(\.changedState).map(\.receivedAt))),
        ])
        let delays = SVGChart.Panel(title: "Longest ingest → APNs delay (s)", series: [
            .init(name: "all events", unit: "", timeSeries: longest(result.events)),
            .init(name: "critical events", unit: "", timeSeries: longest(critical)),
        ])
        let title = "Replay of \(result.header.channelID)"
        return SVGChart().render(title: title, description: title + ": pushes and delays per \(per)", panels: [pushes, delays],
                                 timeUnit: .minutes, empty: "The feed has no events.")
    }
}
