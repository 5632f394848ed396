import Foundation
import LoadKit

/// What every scenario of one `touchline-load` run shares: where processes run, where results
/// go, whether targets are enforced, and which gateway build and configuration to measure.
struct LoadSettings: Sendable {
    var placement = CPUPlacement(cpus: ProcessInfo.processInfo.activeProcessorCount)
    /// Results folders are made under this directory.
    var resultsRoot = "results"
    /// `--check`: exit 1 when a target of the earlier issues is missed.
    var check = false
    /// `--gateway-config FILE`: the user's configuration file for `touchline serve` (the flags the
    /// scenario needs, such as the mock as APNs, still take precedence).
    var gatewayConfig: String?
    /// `--gateway-binary PATH`: the `touchline` executable to measure instead of the one next to
    /// `touchline-load`.
    var gatewayBinary: String?
}
