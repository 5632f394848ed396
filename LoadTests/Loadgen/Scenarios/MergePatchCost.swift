import Foundation
import LoadKit
import Measurements
import TouchlineCore

/// `merge-patch`: the cost of an RFC 7396 merge patch per member, from 1,000 to 100,000 members.
///
/// The API bounds a content-state at 1,000 members, but the merge itself must stay linear, so
/// that no body can make the ingest loop do quadratic work (a 130,000-member patch once held it
/// for 44 s). Each size merges into a state of N members a patch that replaces half of them,
/// removes a quarter and adds N new ones; the figure is nanoseconds per member (of the state
/// and the patch), the best of several runs, and the check holds the largest size to a ratio of
/// the smallest measured in the same run: flat means the same cost per member.
struct MergePatchCost {
    struct Options {
        var sizes = [1_000, 10_000, 100_000]
        /// Members merged per size at least (small sizes repeat), for a stable figure.
        var membersPerMeasurement = 2_000_000
        var runs = 5
        /// Cost per member at the largest size over the smallest, at most.
        var target = 2.0
    }

    static let name = "merge-patch"

    let options: Options

    func run() throws -> ScenarioResult {
        let log = ScenarioLog(Self.name)
        let started = ContinuousClock.now
        var costs: [Double] = []
        var rows: [[String]] = []
        for size in options.sizes {
            let (state, patch) = Self.inputs(members: size)
            guard case .object(let patchMembers) = patch else { throw LoadError("the patch is not an object") }
            let membersPerMerge = size + patchMembers.count
            let repeats = max(1, options.membersPerMeasurement / membersPerMerge)
            var best = Double.infinity
            var resultCount = 0
            for _ in 0..<options.runs {
                let clock = ContinuousClock.now
                for _ in 0..<repeats {
                    if case .object(let members) = state.applyingMergePatch(patch) { resultCount = members.count }
                }
                let elapsed = ContinuousClock.now - clock
                best = min(best, Double(elapsed.inNanoseconds) / Double(repeats * membersPerMerge))
            }
            guard resultCount == size - size / 4 + size else { throw LoadError("merge of \(size) members gave \(resultCount) members") }
            costs.append(best)
            rows.append([ReportNumbers.grouped(Double(size)), String(repeats), String(format: "%.1f", best),
                         String(format: "%.2f", best / costs[0])])
            log.say(String(format: "%@ members: %.1f ns per member (%.2f of the smallest)", ReportNumbers.grouped(Double(size)), best, best / costs[0]))
        }
        let ratio = costs.last! / costs.first!
        return ScenarioResult(
            name: Self.name,
            description: "RFC 7396 merge of a patch as large as its state, from 1,000 to 100,000 members; in-process, no gateway",
            parameters: [.init(name: "sizes", value: options.sizes.map(String.init).joined(separator: ", ")),
                         .init(name: "runs per size", value: String(options.runs))],
            durationSeconds: (ContinuousClock.now - started).inSeconds,
            tables: [.init(title: "Cost per member", columns: ["members", "merges per run", "ns per member", "of the smallest"], rows: rows)],
            checks: [.init(name: "ns per member at \(ReportNumbers.grouped(Double(options.sizes.last!))) / at \(ReportNumbers.grouped(Double(options.sizes.first!)))",
                           measured: ratio, target: options.target, comparison: .atMost)])
    }

    /// A state of `members` members and a patch that replaces every other one, removes every
    /// fourth (from the second) and adds `members` new ones.
    static func inputs(members: Int) -> (state: JSONValue, patch: JSONValue) {
        let state = JSONValue.object((0..<members).map { .init("m\($0)", .integer(Int64($0))) })
        var changes: [JSONValue.Member] = []
        changes.reserveCapacity(members + members / 2)
        for index in stride(from: 0, to: members, by: 2) { changes.append(.init("m\(index)", .integer(-1))) }
        for index in stride(from: 1, to: members, by: 4) { changes.append(.init("m\(index)", .null)) }
        for index in 0..<members { changes.append(.init("n\(index)", .bool(true))) }
        return (state, .object(changes))
    }
}
