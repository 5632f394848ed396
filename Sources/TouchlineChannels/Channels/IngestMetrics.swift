import TouchlineCore

/// The ingest loop's own counters: what the channels' engines and activity do not already count.
/// Plain values, confined to the ingest loop with ``ChannelService``.
package struct IngestMetrics {
    /// Event requests refused, by the API error code (`invalid_event`, `payload_too_large`...).
    package var rejectedEvents: [String: Int] = [:]
    /// Ingest-to-APNs latency by the push's priority.
    package var ingestToAPNs: [ChannelEngine.Priority: Histogram] = [:]
    /// Which channels get their own `channel` label.
    package var channelLabels: ChannelLabelCap

    init(maxChannelLabels: Int) {
        channelLabels = ChannelLabelCap(limit: maxChannelLabels)
    }

    mutating func observeIngestToAPNs(_ latency: Duration, priority: ChannelEngine.Priority) {
        ingestToAPNs[priority, default: Histogram()].observe(latency.inSeconds)
    }
}

extension ChannelService {
    /// Notes APNs' answer to push `sequence` in the channel's history and, when APNs accepted
    /// it, its ingest-to-APNs latency.
    func recordAnswer(of sequence: UInt64, on channel: Channel, outcome: String, retried: Bool) {
        guard let accepted = channel.activity.pushAnswered(sequence: sequence, outcome: outcome, retried: retried, at: .now) else { return }
        metrics.observeIngestToAPNs(accepted.latency, priority: accepted.priority)
    }
}
