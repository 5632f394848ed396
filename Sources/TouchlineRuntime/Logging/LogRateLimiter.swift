/// Lets at most `maxLines` lines through per `interval` and counts the ones it holds back, so a
/// burst of the same complaint (libevent's warnings at the descriptor limit, refused
/// connections) costs a few lines instead of flooding the log. Pure: the caller passes the time.
public struct LogRateLimiter: Sendable, Equatable {
    public let maxLines: Int
    public let interval: Duration
    private var windowStart: ContinuousClock.Instant?
    private var linesInWindow = 0
    private var suppressed = 0

    public init(maxLines: Int, per interval: Duration) {
        self.maxLines = maxLines
        self.interval = interval
    }

    /// nil when the line at `now` must be dropped; otherwise how many lines were dropped since
    /// the last one let through (to say so in this one).
    public mutating func admit(at now: ContinuousClock.Instant) -> Int? {
        if let windowStart, now - windowStart < interval {
            guard linesInWindow < maxLines else {
                suppressed += 1
                return nil
            }
        } else {
            windowStart = now
            linesInWindow = 0
        }
        linesInWindow += 1
        defer { suppressed = 0 }
        return suppressed
    }
}
