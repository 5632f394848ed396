import Foundation

/// Everything one run of the load tools measured: when, on what machine, with which build, and
/// the result of each scenario.
///
/// It is the single source of the results folder: `result.json` is this value encoded, the
/// Markdown summary and the charts are rendered from it, so a run can be re-rendered later from
/// its JSON alone.
public struct BenchmarkReport: Sendable, Codable, Equatable {
    /// When the run started, kept to the whole second (as it is written in the file).
    public var startedAt: Date
    /// The machine the run measured, because every figure depends on it.
    public var machine: MachineDescription
    /// The version of the load tool (and gateway) that produced the figures.
    public var toolVersion: String
    /// One result per scenario, in the order they ran.
    public var scenarios: [ScenarioResult]

    /// `startedAt` is truncated to the whole second, so that a report read back from its JSON
    /// equals the one that was written.
    public init(startedAt: Date, machine: MachineDescription, toolVersion: String, scenarios: [ScenarioResult]) {
        self.startedAt = Date(timeIntervalSince1970: startedAt.timeIntervalSince1970.rounded(.down))
        self.machine = machine
        self.toolVersion = toolVersion
        self.scenarios = scenarios
    }

    /// True when every check of every scenario passed (and so when there were none): what a
    /// `--check` run turns into its exit status.
    public var passed: Bool { scenarios.allSatisfy(\.passed) }

    /// Every check of the run, with the scenario it belongs to, in report order.
    public var allChecks: [(scenario: String, check: ScenarioResult.Check)] {
        scenarios.flatMap { scenario in scenario.checks.map { (scenario.name, $0) } }
    }

    private enum CodingKeys: String, CodingKey {
        case startedAt, machine, toolVersion, scenarios
    }

    /// Decodes `startedAt` from an ISO 8601 string (with or without fractional seconds).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let started = try container.decode(String.self, forKey: .startedAt)
        guard let date = ReportDate.parseISO8601(started) else {
            throw DecodingError.dataCorruptedError(
                forKey: .startedAt, in: container, debugDescription: "startedAt is not an ISO 8601 date: \(started)")
        }
        self.init(
            startedAt: date,
            machine: try container.decode(MachineDescription.self, forKey: .machine),
            toolVersion: try container.decode(String.self, forKey: .toolVersion),
            scenarios: try container.decode([ScenarioResult].self, forKey: .scenarios))
    }

    /// Encodes `startedAt` as an ISO 8601 string in UTC, whatever the encoder's date strategy.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ReportDate.iso8601(startedAt), forKey: .startedAt)
        try container.encode(machine, forKey: .machine)
        try container.encode(toolVersion, forKey: .toolVersion)
        try container.encode(scenarios, forKey: .scenarios)
    }
}

extension BenchmarkReport {
    /// The report as `result.json` holds it: pretty-printed with sorted keys so that two runs
    /// diff line by line; a NaN or infinite figure (a ratio to a zero ceiling) is written as a
    /// string instead of failing the whole file.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = Self.nonConformingFloats
        return try encoder.encode(self)
    }

    /// Reads a report written by `jsonData()`.
    public static func decode(fromJSON data: Data) throws -> BenchmarkReport {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try decoder.decode(BenchmarkReport.self, from: data)
    }

    private static let nonConformingFloats = JSONEncoder.NonConformingFloatEncodingStrategy.convertToString(
        positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
}
