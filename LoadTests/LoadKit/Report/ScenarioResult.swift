import Measurements

/// What one scenario of a load run measured, in the shapes the report renders.
///
/// Scenarios fill in what they have and leave the rest empty: the summary and the chart leave
/// out what is empty.
public struct ScenarioResult: Sendable, Codable, Equatable {
    /// A short name, also the chart's file name: `matchday`, `kickoff-storm`.
    public var name: String
    /// One line saying what the scenario does, for readers who did not write it.
    public var description: String
    /// The parameters the scenario ran with, in the order they are shown.
    public var parameters: [Parameter]
    /// How long the measured phase lasted.
    public var durationSeconds: Double
    public var throughputs: [Throughput]
    public var latencies: [Latency]
    public var processes: [ProcessUsage]
    /// Breakdowns that fit no other shape: coalescing per channel, priority mix, APNs responses.
    public var tables: [Table]
    /// Figures over time, for the chart.
    public var series: [Series]
    /// The targets this run is held to; a failed one fails the run in `--check` mode.
    public var checks: [Check]
    /// Free remarks: what was unusual, what limited the run.
    public var notes: [String]

    public init(
        name: String,
        description: String,
        parameters: [Parameter] = [],
        durationSeconds: Double,
        throughputs: [Throughput] = [],
        latencies: [Latency] = [],
        processes: [ProcessUsage] = [],
        tables: [Table] = [],
        series: [Series] = [],
        checks: [Check] = [],
        notes: [String] = []
    ) {
        self.name = name
        self.description = description
        self.parameters = parameters
        self.durationSeconds = durationSeconds
        self.throughputs = throughputs
        self.latencies = latencies
        self.processes = processes
        self.tables = tables
        self.series = series
        self.checks = checks
        self.notes = notes
    }

    /// True when no check failed (an invalid one does not fail the run).
    public var passed: Bool { !checks.contains(where: \.failed) }
}

extension ScenarioResult {
    /// One named setting of the run, already formatted: `matches` = `300`.
    public struct Parameter: Sendable, Codable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            (self.name, self.value) = (name, value)
        }
    }

    /// A rate over the whole measured phase, and how it compares with what `h2load` reached
    /// against the same mock in the same run: the ratio is the figure that travels between
    /// machines, the rate is not.
    public struct Throughput: Sendable, Codable, Equatable {
        public var name: String
        /// What is counted per second: `pushes/s`, `events/s`.
        public var unit: String
        public var value: Double
        /// `value` divided by the h2load ceiling of the same run, when one was measured.
        public var ceilingRatio: Double?

        public init(name: String, unit: String, value: Double, ceilingRatio: Double? = nil) {
            (self.name, self.unit, self.value, self.ceilingRatio) = (name, unit, value, ceilingRatio)
        }
    }

    /// The percentiles of one latency (event ingested to APNs answer, APNs response time, ...).
    public struct Latency: Sendable, Codable, Equatable {
        public var name: String
        public var summary: LatencySummary
        /// What the latency includes or leaves out, when the name alone cannot say it.
        public var note: String?

        public init(name: String, summary: LatencySummary, note: String? = nil) {
            (self.name, self.summary, self.note) = (name, summary, note)
        }
    }

    /// What one process (gateway, mock APNs, load generator, h2load) cost during the phase.
    public struct ProcessUsage: Sendable, Codable, Equatable {
        public var name: String
        /// User plus system CPU time.
        public var cpuSeconds: Double
        /// CPU time divided by the operations the process served, when that count is known.
        public var cpuMicrosecondsPerOperation: Double?
        public var peakRSSBytes: Int

        public init(name: String, cpuSeconds: Double, cpuMicrosecondsPerOperation: Double? = nil, peakRSSBytes: Int) {
            self.name = name
            self.cpuSeconds = cpuSeconds
            self.cpuMicrosecondsPerOperation = cpuMicrosecondsPerOperation
            self.peakRSSBytes = peakRSSBytes
        }
    }

    /// A titled table of already formatted cells; rows shorter than `columns` are padded with
    /// empty cells when rendered.
    public struct Table: Sendable, Codable, Equatable {
        public var title: String
        public var columns: [String]
        public var rows: [[String]]

        public init(title: String, columns: [String], rows: [[String]]) {
            (self.title, self.columns, self.rows) = (title, columns, rows)
        }
    }

    /// A figure over time. The chart draws `throughput` series in its upper panel (per second)
    /// and `latency` series in its lower panel (milliseconds); `resource` series (CPU share,
    /// RSS) are kept in the JSON only.
    public struct Series: Sendable, Codable, Equatable {
        public enum Kind: String, Sendable, Codable, Equatable {
            case throughput, latency, resource
        }

        public var name: String
        public var unit: String
        public var kind: Kind
        public var timeSeries: TimeSeries

        public init(name: String, unit: String, kind: Kind, timeSeries: TimeSeries) {
            (self.name, self.unit, self.kind, self.timeSeries) = (name, unit, kind, timeSeries)
        }
    }
}
