import TouchlineChannels
import TouchlineCore

/// The figures of "one start per device and generation" (docs/personal-pushes.md) for `/metrics`.
extension OperatorsAPI {
    func generationStartMetricFamilies(_ loops: LoopSnapshots) -> [MetricFamily] {
        var leftOut = MetricFamily("touchline_personal_starts_left_out_total",
                                   help: "Audience tokens a kickoff or rollover left out because their device was started into that APNs channel already, by app.",
                                   kind: .counter)
        for queue in loops.personalQueues { leftOut.add(queue.startsLeftOut, ["app": queue.apns.app]) }
        return [leftOut]
    }
}
