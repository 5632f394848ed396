/// One line of a Prometheus text exposition: a series and its value.
public struct PrometheusSample: Sendable, Equatable {
    /// As written, with a histogram's `_bucket`, `_sum` or `_count` suffix.
    public var name: String
    public var labels: [String: String]
    public var value: Double

    public init(name: String, labels: [String: String] = [:], value: Double) {
        (self.name, self.labels, self.value) = (name, labels, value)
    }

    /// True when every label of `selector` has the same value here (other labels may differ).
    public func matches(_ selector: [String: String]) -> Bool {
        selector.allSatisfy { labels[$0.key] == $0.value }
    }
}

/// A line of the exposition that could not be read.
public struct PrometheusParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// From 1.
    public var line: Int
    public var message: String

    public var description: String { "metrics line \(line): \(message)" }
}

/// A histogram read back from its `_bucket`, `_sum` and `_count` samples (summed over the series
/// that were selected), for percentiles the way Prometheus' `histogram_quantile` estimates them.
public struct PrometheusHistogram: Sendable, Equatable {
    /// Cumulative counts by upper bound, ascending, ending with `+Inf`.
    public var buckets: [(upperBound: Double, count: Double)]
    public var sum: Double
    public var count: Double

    public static func == (left: Self, right: Self) -> Bool {
        left.sum == right.sum && left.count == right.count
            && left.buckets.map(\.upperBound) == right.buckets.map(\.upperBound) && left.buckets.map(\.count) == right.buckets.map(\.count)
    }

    /// The `quantile` (0 to 1) by linear interpolation inside its bucket; the last finite bound
    /// when it falls in `+Inf`; nil without observations.
    public func quantile(_ quantile: Double) -> Double? {
        guard let total = buckets.last?.count, total > 0 else { return nil }
        let rank = quantile * total
        var lower = (bound: 0.0, count: 0.0)
        for bucket in buckets {
            if bucket.count >= rank {
                guard bucket.upperBound.isFinite else { return lower.bound }
                let inBucket = bucket.count - lower.count
                return inBucket == 0 ? bucket.upperBound
                    : lower.bound + (bucket.upperBound - lower.bound) * (rank - lower.count) / inBucket
            }
            lower = (bucket.upperBound, bucket.count)
        }
        return lower.bound
    }
}

/// What one `GET /metrics` returned, parsed from the text exposition format 0.0.4: `# HELP` and
/// `# TYPE` lines, samples `name{label="value",…} value [timestamp]` with escaped label values,
/// histograms as `_bucket{le=…}`, `_sum` and `_count` samples.
///
/// The load scenarios read the gateway's own figures from it (pushes by priority, coalesced
/// updates, APNs answers by status), usually as the difference of two scrapes around a phase.
public struct PrometheusSnapshot: Sendable {
    public let samples: [PrometheusSample]
    /// The `# TYPE` of each family: `counter`, `gauge`, `histogram`, `summary` or `untyped`.
    public let types: [String: String]

    public init(samples: [PrometheusSample], types: [String: String] = [:]) {
        (self.samples, self.types) = (samples, types)
    }

    public init(parsing text: String) throws(PrometheusParseError) {
        var samples: [PrometheusSample] = []
        var types: [String: String] = [:]
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var reader = PrometheusLineReader(line: line, number: number + 1)
            reader.skipSpaces()
            if reader.atEnd { continue }
            if reader.peek == UInt8(ascii: "#") {
                if let (family, type) = try reader.typeComment() { types[family] = type }
                continue
            }
            samples.append(try reader.sample())
        }
        self.init(samples: samples, types: types)
    }

    /// The value of the series `name` with exactly these labels.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// The sum over the series of `name` whose labels include `selector`.
    public func sum(_ name: String, matching selector: [String: String] = [:]) -> Double {
        samples.reduce(0) { $1.name == name && $1.matches(selector) ? $0 + $1.value : $0 }
    }

    /// Sums of `name` by the value of `label` (series without it are left out), e.g.
    /// `touchline_pushes_sent_total` by `priority`.
    public func sum(_ name: String, by label: String, matching selector: [String: String] = [:]) -> [String: Double] {
        var sums: [String: Double] = [:]
        for sample in samples where sample.name == name && sample.matches(selector) {
            guard let key = sample.labels[label] else { continue }
            sums[key, default: 0] += sample.value
        }
        return sums
    }

    /// The histogram family `name` summed over its series whose labels include `selector`;
    /// nil when there is no such series.
    public func histogram(_ name: String, matching selector: [String: String] = [:]) -> PrometheusHistogram? {
        var byBound: [Double: Double] = [:]
        for sample in samples where sample.name == name + "_bucket" && sample.matches(selector) {
            guard let bound = sample.labels["le"].flatMap(PrometheusLineReader.number) else { continue }
            byBound[bound, default: 0] += sample.value
        }
        guard !byBound.isEmpty else { return nil }
        return PrometheusHistogram(buckets: byBound.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                                   sum: sum(name + "_sum", matching: selector), count: sum(name + "_count", matching: selector))
    }

    /// What happened between `earlier` and this snapshot: counters and histograms as the
    /// increase (a series new since `earlier` counts from 0, and so does one that went down: the
    /// process restarted), gauges and untyped series as they are now. Series gone since
    /// `earlier` are left out.
    public func since(_ earlier: PrometheusSnapshot) -> PrometheusSnapshot {
        var before: [String: [[String: String]: Double]] = [:]
        for sample in earlier.samples { before[sample.name, default: [:]][sample.labels] = sample.value }
        let changes = samples.map { sample -> PrometheusSample in
            guard isCumulative(sample.name) else { return sample }
            var change = sample
            let previous = before[sample.name]?[sample.labels] ?? 0
            if sample.value >= previous { change.value -= previous }
            return change
        }
        return PrometheusSnapshot(samples: changes, types: types)
    }

    /// A counter, or a histogram's bucket, sum or count.
    private func isCumulative(_ name: String) -> Bool {
        if types[name] == "counter" { return true }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let family = String(name.dropLast(suffix.count))
            if types[family] == "histogram" || types[family] == "summary" { return true }
        }
        return false
    }
}

/// Reads one line of the exposition, byte by byte.
private struct PrometheusLineReader {
    private let bytes: [UInt8]
    private let number: Int
    private var position = 0

    init(line: Substring, number: Int) {
        bytes = Array(line.utf8)
        self.number = number
    }

    var atEnd: Bool { position >= bytes.count }
    var peek: UInt8? { atEnd ? nil : bytes[position] }

    mutating func skipSpaces() {
        while let byte = peek, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") { position += 1 }
    }

    private func error(_ message: String) -> PrometheusParseError {
        PrometheusParseError(line: number, message: message + " at column \(position + 1)")
    }

    /// `# TYPE name type` gives the pair; `# HELP` and other comments give nil.
    mutating func typeComment() throws(PrometheusParseError) -> (String, String)? {
        let words = String(decoding: bytes, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: true)
        guard words.count >= 2, words[0] == "#", words[1] == "TYPE" else { return nil }
        guard words.count == 4 else { throw error("a TYPE comment needs a metric name and a type") }
        return (String(words[2]), String(words[3]))
    }

    mutating func sample() throws(PrometheusParseError) -> PrometheusSample {
        let name = try identifier(allowingColon: true)
        var labels: [String: String] = [:]
        skipSpaces()
        if peek == UInt8(ascii: "{") {
            position += 1
            while true {
                skipSpaces()
                if peek == UInt8(ascii: "}") { position += 1; break }
                let label = try identifier(allowingColon: false)
                skipSpaces()
                guard peek == UInt8(ascii: "=") else { throw error("expected '=' after label \(label)") }
                position += 1
                skipSpaces()
                guard labels.updateValue(try quoted(), forKey: label) == nil else { throw error("label \(label) given twice") }
                skipSpaces()
                if peek == UInt8(ascii: ",") { position += 1; continue }
                guard peek == UInt8(ascii: "}") else { throw error("expected ',' or '}' in the labels of \(name)") }
            }
        }
        skipSpaces()
        let start = position
        while let byte = peek, byte != UInt8(ascii: " "), byte != UInt8(ascii: "\t"), byte != UInt8(ascii: "\r") { position += 1 }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = Self.number(text) else { throw error("'\(text)' is not a sample value for \(name)") }
        skipSpaces()
        // An optional timestamp (milliseconds) may follow; nothing else may.
        while let byte = peek, byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { position += 1 }
        skipSpaces()
        guard atEnd else { throw error("unexpected text after the value of \(name)") }
        return PrometheusSample(name: name, labels: labels, value: value)
    }

    private mutating func identifier(allowingColon: Bool) throws(PrometheusParseError) -> String {
        let start = position
        while let byte = peek {
            let letter = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || byte == UInt8(ascii: "_") || (allowingColon && byte == UInt8(ascii: ":"))
            let digit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            guard letter || (digit && position > start) else { break }
            position += 1
        }
        guard position > start else { throw error(allowingColon ? "expected a metric name" : "expected a label name") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// A label value: `"…"` with `\\`, `\"` and `\n` escapes.
    private mutating func quoted() throws(PrometheusParseError) -> String {
        guard peek == UInt8(ascii: "\"") else { throw error("expected '\"' to open a label value") }
        position += 1
        var value: [UInt8] = []
        while let byte = peek {
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: value, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = peek else { break }
                position += 1
                switch escaped {
                case UInt8(ascii: "n"): value.append(UInt8(ascii: "\n"))
                case UInt8(ascii: "\\"), UInt8(ascii: "\""): value.append(escaped)
                default: throw error("unknown escape '\\\(Character(Unicode.Scalar(escaped)))' in a label value")
                }
            default:
                value.append(byte)
            }
        }
        throw error("unterminated label value")
    }

    /// A sample value or `le` bound: a decimal number, `+Inf`, `-Inf` or `NaN`.
    static func number(_ text: String) -> Double? {
        switch text {
        case "+Inf", "Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            guard let first = text.first, first.isNumber || first == "-" || first == "+" || first == "." else { return nil }
            return Double(text)
        }
    }
}
