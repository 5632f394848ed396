import Foundation
import LoadKit
import Measurements

/// Progress lines of a scenario, printed at once (also into a pipe or file) so a long run shows
/// where it is; creating one starts the scenario's live progress (``ProgressPrinter``).
struct ScenarioLog {
    let scenario: String

    init(_ scenario: String) {
        self.scenario = scenario
        LoadProgress.shared.begin(scenario)
        ProgressPrinter.start()
    }

    func say(_ line: String) {
        ProgressPrinter.say("\(scenario): \(line)")
    }
}

extension LatencyHistogram {
    /// A histogram of samples given in milliseconds (the load generator's own timings).
    init(milliseconds samples: [Double]) {
        self.init()
        for sample in samples { record(Int64(sample * 1e6)) }
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
