/// A point on one instance's monotonic clock, in nanoseconds since its ``PartitionLeases`` was
/// made: the machine reckons in plain integers and converts the shell's instants at its edges.
struct Moment: Comparable, Hashable, Sendable {
    let nanoseconds: Int64

    static func < (a: Moment, b: Moment) -> Bool { a.nanoseconds < b.nanoseconds }
    static func + (moment: Moment, span: Span) -> Moment { Moment(nanoseconds: moment.nanoseconds + span.nanoseconds) }
    static func - (moment: Moment, span: Span) -> Moment { Moment(nanoseconds: moment.nanoseconds - span.nanoseconds) }
}

/// A length of time in nanoseconds, to add to a ``Moment``.
struct Span: Comparable, Hashable, Sendable {
    let nanoseconds: Int64

    init(_ duration: Duration) { nanoseconds = duration.inNanoseconds }
    private init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    static func < (a: Span, b: Span) -> Bool { a.nanoseconds < b.nanoseconds }
    static func + (a: Span, b: Span) -> Span { Span(nanoseconds: a.nanoseconds + b.nanoseconds) }
    static func - (a: Span, b: Span) -> Span { Span(nanoseconds: a.nanoseconds - b.nanoseconds) }
    static func / (span: Span, divisor: Int64) -> Span { Span(nanoseconds: span.nanoseconds / divisor) }
}

/// ``LeaseSettings``' durations as ``Span``s.
struct LeaseTiming: Sendable {
    let leaseTTL: Span
    let renewInterval: Span
    let safetyMargin: Span
    let memberTTL: Span
    let writeTimeout: Span
    let retryDelay: Span

    init(_ settings: LeaseSettings) {
        leaseTTL = Span(settings.leaseTTL)
        renewInterval = Span(settings.renewInterval)
        safetyMargin = Span(settings.safetyMargin)
        memberTTL = Span(settings.memberTTL)
        writeTimeout = Span(settings.writeTimeout)
        retryDelay = Span(settings.retryDelay)
    }
}
