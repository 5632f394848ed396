import Measurements
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What one measuring period saw arrive, for one worker loop or merged over all: answers by
/// status per endpoint, and per endpoint and apns-priority the accepted requests and the
/// latencies of those carrying the sender's timestamp, both by interval.
///
/// Fixed slots (endpoint × priority) hold the series, so recording is a few array increments.
struct MockAPNsArrivalTally {
    /// The priorities with series of their own; slot 0 also takes requests without one.
    private static let priorities: [Int?] = [nil, 1, 5, 10]
    private static let endpoints = MockAPNsEndpoint.allCases

    let period: MeasurementPeriod
    /// Answers by status, per endpoint.
    private var statuses: [[Int: Int]]
    /// Per endpoint × priority.
    private var arrivals: [RateCounter]
    private var latencies: [LatencyTimeline]

    init(period: MeasurementPeriod) {
        self.period = period
        statuses = Array(repeating: [:], count: Self.endpoints.count)
        let slots = Self.endpoints.count * Self.priorities.count
        arrivals = Array(repeating: RateCounter(period: period), count: slots)
        latencies = Array(repeating: LatencyTimeline(period: period), count: slots)
    }

    /// Counts one answer at `time` (Unix ns); an accepted one also counts as an arrival, and as
    /// a latency sample when its payload carried the sender's time `sentAt`.
    mutating func record(endpoint: MockAPNsEndpoint, status: Int, priority: Int?, sentAt: Int64?, at time: Int64) {
        let endpointIndex = Self.endpoints.firstIndex(of: endpoint)!
        statuses[endpointIndex][status, default: 0] += 1
        guard (200..<300).contains(status) else { return }
        let slot = endpointIndex * Self.priorities.count + (Self.priorities.firstIndex(of: priority) ?? 0)
        arrivals[slot].record(at: time)
        if let sentAt { latencies[slot].record(time - sentAt, at: time) }
    }

    /// Adds another worker's tally of the same period.
    mutating func merge(_ other: MockAPNsArrivalTally) {
        for index in statuses.indices { statuses[index].merge(other.statuses[index], uniquingKeysWith: +) }
        for slot in arrivals.indices {
            arrivals[slot].merge(other.arrivals[slot])
            latencies[slot].merge(other.latencies[slot])
        }
    }

    /// The report of endpoints that answered anything, by name, ending at `end` (Unix ns).
    func report(endNanoseconds end: Int64) -> ArrivalReport {
        let endpoints = Self.endpoints.indices.compactMap { endpointIndex -> ArrivalReport.Endpoint? in
            guard !statuses[endpointIndex].isEmpty else { return nil }
            let streams = Self.priorities.indices.compactMap { priorityIndex -> ArrivalReport.Stream? in
                let slot = endpointIndex * Self.priorities.count + priorityIndex
                guard arrivals[slot].total > 0 else { return nil }
                return ArrivalReport.Stream(priority: Self.priorities[priorityIndex], arrivals: arrivals[slot], latency: latencies[slot])
            }
            return ArrivalReport.Endpoint(name: Self.endpoints[endpointIndex].rawValue,
                                          statuses: Dictionary(uniqueKeysWithValues: statuses[endpointIndex].map { (String($0.key), $0.value) }),
                                          streams: streams)
        }
        return ArrivalReport(period: period, endNanoseconds: end, endpoints: endpoints.sorted { $0.name < $1.name })
    }
}

/// The tally of one worker loop: only that loop records into it, so its lock is contended only
/// when a report is taken (as with ``MockAPNsCounterShard``), never between loops.
final class MockAPNsArrivalShard: Sendable {
    private let tally: Mutex<MockAPNsArrivalTally>

    init(period: MeasurementPeriod) {
        tally = Mutex(MockAPNsArrivalTally(period: period))
    }

    func record(endpoint: MockAPNsEndpoint, status: Int, priority: Int?, sentAt: Int64?, at time: Int64) {
        tally.withLock { $0.record(endpoint: endpoint, status: status, priority: priority, sentAt: sentAt, at: time) }
    }

    /// The tally so far; recording continues into a fresh one of `period`.
    func take(startingNew period: MeasurementPeriod) -> MockAPNsArrivalTally {
        tally.withLock { current in
            defer { current = MockAPNsArrivalTally(period: period) }
            return current
        }
    }
}

/// The payload member holding the sender's wall-clock time in Unix nanoseconds (`"sentAt": N`,
/// e.g. in the content-state), for arrival latency across processes.
///
/// Only looked for (a byte search), never required: payload rules stay as strict as without it.
struct MockAPNsTimestampField: Sendable {
    /// `"name":` as bytes.
    private let needle: [UInt8]

    init(name: String) {
        needle = Array("\"\(name)\":".utf8)
    }

    /// The whole number right after the member's name in `body`, if any.
    func value(in body: [UInt8]) -> Int64? {
        Self.number(after: needle, in: body)
    }

    /// The digits right after `needle` in `body`; nil for none, and for a number beyond Int64
    /// (not a time in nanoseconds). Runs for every accepted push, so it neither searches
    /// generically nor builds strings.
    static func number(after needle: [UInt8], in body: [UInt8]) -> Int64? {
        guard var index = end(of: needle, in: body) else { return nil }
        var value: Int64 = 0
        let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
        guard index < body.count, digits.contains(body[index]) else { return nil }
        while index < body.count, digits.contains(body[index]) {
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = shifted.addingReportingOverflow(Int64(body[index] - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            value = sum
            index += 1
        }
        return value
    }

    /// The index just past the first occurrence of `needle` (non-empty) in `body`: memchr for
    /// its first byte, then memcmp.
    private static func end(of needle: [UInt8], in body: [UInt8]) -> Int? {
        body.withUnsafeBytes { haystack -> Int? in
            needle.withUnsafeBytes { pattern -> Int? in
                guard let base = haystack.baseAddress, haystack.count >= pattern.count else { return nil }
                var offset = 0
                let last = haystack.count - pattern.count
                while offset <= last, let hit = memchr(base + offset, Int32(pattern[0]), last - offset + 1) {
                    offset = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + offset, pattern.baseAddress!, pattern.count) == 0 { return offset + pattern.count }
                    offset += 1
                }
                return nil
            }
        }
    }
}
