import Measurements

/// One look at a running load scenario, as a person watching it wants it: where it is, how
/// long it has run and has left, the current request rate and p99, and how many matches ended.
public struct ProgressLine: Sendable {
    public var scenario: String
    /// The phase under way ("uniform pacing (baseline)", "paced events"); empty before the first.
    public var phase: String
    public var elapsedSeconds: Double
    /// The phase's expected remaining time, when it is known.
    public var remainingSeconds: Double?
    /// Requests answered per second over the last interval.
    public var requestsPerSecond: Double
    /// p99 of the requests answered in the last interval, in ms; nil when none were.
    public var p99Milliseconds: Double?
    /// Matches ended so far and in all, in scenarios that play matches.
    public var matchesEnded: (done: Int, of: Int)?

    public init(scenario: String, phase: String = "", elapsedSeconds: Double, remainingSeconds: Double? = nil, requestsPerSecond: Double = 0,
                p99Milliseconds: Double? = nil, matchesEnded: (done: Int, of: Int)? = nil) {
        (self.scenario, self.phase, self.elapsedSeconds, self.remainingSeconds) = (scenario, phase, elapsedSeconds, remainingSeconds)
        (self.requestsPerSecond, self.p99Milliseconds, self.matchesEnded) = (requestsPerSecond, p99Milliseconds, matchesEnded)
    }

    /// `matchday · default policy · 1:23 elapsed, ~2:10 left · 337 req/s · p99 2.1 ms · 120/300 matches ended`,
    /// cut to `width` characters (a terminal line must not wrap, or it cannot be redrawn).
    public func rendered(width: Int = 1000) -> String {
        var parts = [scenario]
        if !phase.isEmpty { parts.append(phase) }
        var time = "\(Self.clock(elapsedSeconds)) elapsed"
        if let remainingSeconds { time += ", ~\(Self.clock(max(0, remainingSeconds))) left" }
        parts.append(time)
        parts.append("\(ReportNumbers.grouped(requestsPerSecond)) req/s")
        if let p99Milliseconds { parts.append("p99 \(ReportNumbers.figure(p99Milliseconds)) ms") }
        if let matchesEnded { parts.append("\(matchesEnded.done)/\(matchesEnded.of) matches ended") }
        let line = parts.joined(separator: " · ")
        return line.count <= width ? line : String(line.prefix(max(1, width - 1))) + "…"
    }

    /// `m:ss`, or `h:mm:ss` from an hour.
    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.down))
        let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60)
        let two = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(two(minutes)):\(two(secs))" : "\(minutes):\(two(secs))"
    }
}
