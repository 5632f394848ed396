/// One metric label, `name="value"`.
public struct MetricLabel: Hashable, Sendable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A label set in the order it is written out; a dictionary literal keeps its written order.
public struct MetricLabels: Hashable, Sendable, ExpressibleByDictionaryLiteral {
    public var labels: [MetricLabel]

    public init(_ labels: [MetricLabel] = []) { self.labels = labels }
    public init(dictionaryLiteral elements: (String, String)...) { labels = elements.map { MetricLabel($0.0, $0.1) } }
}

/// What kind of series a family holds, as Prometheus' `# TYPE` line names it.
public enum MetricKind: String, Sendable {
    case counter, gauge, histogram
}

/// One metric (a name, its help text and kind) with its series, ready for an encoder.
///
/// Series are built by adding: adding twice to the same label set sums the values (or merges
/// the histograms). That is how channels beyond the label cap fold into one `_other` series,
/// and how figures gathered from several loops combine. Series keep the order they were first
/// added in, so the output is deterministic.
public struct MetricFamily: Sendable {
    public let name: String
    public let help: String
    public let kind: MetricKind
    public private(set) var series: [Series] = []
    private var positions: [MetricLabels: Int] = [:]

    /// One series: a label set and its value.
    public struct Series: Sendable {
        public var labels: MetricLabels
        public var value: Value
    }

    public enum Value: Sendable, Equatable {
        case number(Double)
        case histogram(Histogram)
    }

    public init(_ name: String, help: String, kind: MetricKind) {
        self.name = name
        self.help = help
        self.kind = kind
    }

    /// Adds `value` to the series `labels` (creating it at `value`). Counters and gauges only.
    public mutating func add(_ value: Double, _ labels: MetricLabels = [:]) {
        precondition(kind != .histogram, "\(name) is a histogram: add observations as a Histogram")
        if let position = positions[labels], case .number(let current) = series[position].value {
            series[position].value = .number(current + value)
        } else {
            positions[labels] = series.count
            series.append(Series(labels: labels, value: .number(value)))
        }
    }

    /// Adds a whole number (counts).
    public mutating func add(_ value: Int, _ labels: MetricLabels = [:]) { add(Double(value), labels) }

    /// Merges `histogram` into the series `labels`. Histograms only, with matching buckets.
    public mutating func add(_ histogram: Histogram, _ labels: MetricLabels = [:]) {
        precondition(kind == .histogram, "\(name) is not a histogram")
        if let position = positions[labels], case .histogram(var current) = series[position].value {
            current.merge(histogram)
            series[position].value = .histogram(current)
        } else {
            positions[labels] = series.count
            series.append(Series(labels: labels, value: .histogram(histogram)))
        }
    }

    /// The value of the series `labels`, if it exists (tests, JSON stats).
    public func value(_ labels: MetricLabels = [:]) -> Value? {
        positions[labels].map { series[$0].value }
    }
}
