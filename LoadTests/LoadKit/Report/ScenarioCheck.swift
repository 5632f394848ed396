extension ScenarioResult {
    /// One target a run is held to, with what was measured against it.
    ///
    /// Targets are ratios or relative figures wherever possible (throughput against the h2load
    /// ceiling, coalescing ratio), because absolute rates move with the machine.
    public struct Check: Sendable, Codable, Equatable {
        /// Which side of the target passes.
        public enum Comparison: String, Sendable, Codable, Equatable {
            case atLeast = "at-least"
            case atMost = "at-most"

            /// `≥` or `≤`, for tables.
            public var symbol: String {
                switch self {
                case .atLeast: "≥"
                case .atMost: "≤"
                }
            }

            /// Whether `measured` lies on the passing side of `target` (NaN never does).
            public func holds(_ measured: Double, against target: Double) -> Bool {
                switch self {
                case .atLeast: measured >= target
                case .atMost: measured <= target
                }
            }
        }

        public var name: String
        public var measured: Double
        public var target: Double
        public var comparison: Comparison
        public var passed: Bool
        /// The unit of `measured` and `target` (`ms`, `pushes/s`), empty for plain ratios.
        public var unit: String
        /// Set when the run could not measure this fairly (the load generator fell behind its own
        /// schedule): the check is reported as invalid, neither passed nor failed.
        public var invalidReason: String?

        /// Missed its target in a run that measured it fairly: what fails `--check`.
        public var failed: Bool { !passed && invalidReason == nil }

        /// This check, reported as invalid for `reason` when `condition` holds.
        public func invalid(when condition: Bool, because reason: @autoclosure () -> String) -> Check {
            var check = self
            if condition { check.invalidReason = reason() }
            return check
        }

        /// A check whose verdict was decided elsewhere.
        public init(name: String, measured: Double, target: Double, comparison: Comparison, passed: Bool, unit: String = "") {
            self.name = name
            self.measured = measured
            self.target = target
            self.comparison = comparison
            self.passed = passed
            self.unit = unit
        }

        /// A check whose verdict is `comparison` applied to `measured` and `target`.
        public init(name: String, measured: Double, target: Double, comparison: Comparison, unit: String = "") {
            self.init(
                name: name, measured: measured, target: target, comparison: comparison,
                passed: comparison.holds(measured, against: target), unit: unit)
        }
    }
}
