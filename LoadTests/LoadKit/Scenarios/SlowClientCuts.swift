/// How the gateway dealt with one kind of slow client: each connection either was cut by the
/// gateway (a 408, or a plain close for an idle connection) or died with the gateway at a kill.
///
/// A cut is on time when it came no earlier than the deadline that should have cut it (minus a
/// little for timer granularity) and no later than `tolerance` after it: a gateway that cut
/// too early would hurt honest slow clients, one that cut too late (or never) lets a slow
/// client hold a connection and its memory for longer than promised.
public struct SlowClientCuts: Sendable, Equatable {
    /// One connection's end.
    public struct Cut: Sendable, Equatable {
        /// Seconds from the moment the deadline started (first byte of the head, end of the
        /// head, connection accepted) to the gateway's cut.
        public var afterSeconds: Double
        /// The HTTP status the gateway sent before closing, if any.
        public var status: Int?
        /// When the cut came, in seconds from the start of the run.
        public var at: Double

        public init(afterSeconds: Double, status: Int?, at: Double = 0) {
            (self.afterSeconds, self.status, self.at) = (afterSeconds, status, at)
        }
    }

    public let kind: String
    public let deadlineSeconds: Double
    public let tolerance: Double
    /// The status a cut should carry (408 for heads and bodies, nil for idle connections).
    public let expectedStatus: Int?
    public private(set) var cuts: [Cut] = []
    /// Connections that ended because the gateway was killed, not cut.
    public private(set) var lostToKills = 0
    /// Connections the client gave up on: still open long past the deadline.
    public private(set) var neverCut = 0

    public init(kind: String, deadlineSeconds: Double, tolerance: Double, expectedStatus: Int?) {
        (self.kind, self.deadlineSeconds, self.tolerance, self.expectedStatus) = (kind, deadlineSeconds, tolerance, expectedStatus)
    }

    public mutating func record(_ cut: Cut) { cuts.append(cut) }
    public mutating func recordLostToKill() { lostToKills += 1 }
    public mutating func recordNeverCut() { neverCut += 1 }

    public mutating func merge(_ other: SlowClientCuts) {
        cuts += other.cuts
        lostToKills += other.lostToKills
        neverCut += other.neverCut
    }

    /// Whether a cut came within [deadline − 0.2 s, deadline + tolerance] with the right status.
    public func isOnTime(_ cut: Cut) -> Bool {
        cut.afterSeconds >= deadlineSeconds - 0.2 && cut.afterSeconds <= deadlineSeconds + tolerance && cut.status == expectedStatus
    }

    public var onTime: Int { cuts.count { isOnTime($0) } }
    /// Cuts too early, too late or with the wrong status, plus connections never cut.
    public var offTime: Int { cuts.count - onTime + neverCut }

    /// The smallest, median and largest cut time, in seconds (zeros without cuts).
    public var spread: (min: Double, median: Double, max: Double) {
        let sorted = cuts.map(\.afterSeconds).sorted()
        guard let first = sorted.first, let last = sorted.last else { return (0, 0, 0) }
        let middle = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        return (first, middle, last)
    }
}
