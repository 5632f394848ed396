import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import TouchlineCore

/// Latency from a sender's clock to the mock's arrival, for load tests across processes: the
/// sender writes its wall-clock time (Unix nanoseconds) into the payload as `"field": N` (e.g. in
/// the content-state), and every accepted push carrying it adds one sample, arrival minus N.
///
/// Only the field is looked for (a byte search), never required: payload rules stay as strict as
/// without it. Samples are kept per endpoint until ``takeReport()`` hands them out and starts
/// over, so one mock process can measure several phases.
final class MockAPNsArrivalLatency: Sendable {
    /// `"field":` as bytes.
    private let needle: [UInt8]
    private let samples = Mutex<[MockAPNsEndpoint: [Int64]]>([:])

    init(field: String) {
        needle = Array("\"\(field)\":".utf8)
    }

    /// Adds a sample when `body` carries the field with a whole number.
    func record(_ body: [UInt8], endpoint: MockAPNsEndpoint, arrivedAt: UnixTime) {
        guard let sentAt = Self.number(after: needle, in: body) else { return }
        samples.withLock { $0[endpoint, default: []].append(arrivedAt.nanoseconds - sentAt) }
    }

    /// The samples so far, summarised per endpoint; forgets them.
    func takeReport() -> MockAPNsArrivalReport {
        let taken = samples.withLock { current in
            defer { current = [:] }
            return current
        }
        return MockAPNsArrivalReport(rows: taken.sorted { $0.key.rawValue < $1.key.rawValue }.map { .init(endpoint: $0.key, nanoseconds: $0.value) })
    }

    /// The digits right after `needle` in `body`, if any.
    static func number(after needle: [UInt8], in body: [UInt8]) -> Int64? {
        guard let end = end(of: needle, in: body) else { return nil }
        let digits = body[end...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        // Nil for no digits, and for a number beyond Int64 (not a time in nanoseconds).
        return Int64(String(decoding: digits, as: UTF8.self))
    }

    /// The index just past the first occurrence of `needle` (non-empty) in `body`: memchr for
    /// its first byte, then memcmp. This runs for every accepted push, so no generic search.
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

/// Arrival latencies of one measuring period, per endpoint.
public struct MockAPNsArrivalReport: Sendable, CustomStringConvertible {
    public struct Row: Sendable {
        public var endpoint: MockAPNsEndpoint
        public var count: Int
        /// Milliseconds.
        public var p50: Double
        public var p99: Double
        public var max: Double

        init(endpoint: MockAPNsEndpoint, nanoseconds: [Int64]) {
            let sorted = nanoseconds.sorted()
            func at(_ share: Double) -> Double { Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * share))]) / 1e6 }
            self.endpoint = endpoint
            count = sorted.count
            p50 = at(0.5)
            p99 = at(0.99)
            max = Double(sorted.last!) / 1e6
        }
    }

    public var rows: [Row]

    /// The marker of the report's last line, so a reader of the output knows it is complete.
    public static let endMarker = "arrival latency report end"

    /// One line per endpoint (`arrival latency broadcast: count 2000, p50 0.412 ms, ...`), then the end marker.
    public var description: String {
        let lines = rows.map { row in
            "arrival latency \(row.endpoint.rawValue): count \(row.count), p50 \(Self.milliseconds(row.p50)) ms, "
                + "p99 \(Self.milliseconds(row.p99)) ms, max \(Self.milliseconds(row.max)) ms"
        }
        return (lines + [Self.endMarker]).joined(separator: "\n")
    }

    private static func milliseconds(_ value: Double) -> String {
        let micro = Int64((value * 1000).rounded())
        let fraction = String(micro % 1000)
        return "\(micro / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
