import Foundation
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Feed watching (``FeedWatch``): a live match whose feed falls silent for its
/// `feedStallSeconds` is marked stalled, and recovered when events come again; a jump of `seq`
/// is reported as a gap. Each report is a log line, a webhook event (committed with the events
/// that show it, or on its own for a stall) and a metric; the channel's `feed` shows it. The
/// watch runs in the channel's machine (its timer is one of the machine's deadlines); this
/// words what it reports.
extension ChannelService {
    /// The webhook events of `reports`.
    func feedEvents(_ reports: [FeedWatch.Report], of channel: Channel) -> [StoreOperation] {
        reports.flatMap { report -> [StoreOperation] in
            switch report {
            case .stalled(let lastEventAt, let silence):
                channelEvent(.channelFeedStalled, of: channel, extra: [.init("lastEventAt", .integer(lastEventAt.seconds)),
                                                                       .init("silentSeconds", .number(silence.inSeconds)),
                                                                       .init("lastSeq", .integer(channel.lastSeq))])
            case .recovered(let since):
                channelEvent(.channelFeedRecovered, of: channel, extra: [.init("stalledSince", .integer(since.seconds))])
            case .gap(let from, let to):
                channelEvent(.channelFeedGap, of: channel, extra: [.init("fromSeq", .integer(from)), .init("toSeq", .integer(to)),
                                                                   .init("missing", .integer(to - from - 1))])
            }
        }
    }

    /// Logs what the watch saw (the metrics read the channel's watch).
    func note(_ reports: [FeedWatch.Report], of channel: Channel) {
        for report in reports {
            switch report {
            case .stalled(_, let silence):
                log.warning("the channel's feed stalled: no event for \(String(format: "%.1f", silence.inSeconds)) s while the match is live",
                            channel: channel.id)
            case .recovered(let since):
                log.notice("the channel's feed recovered after \(Int((clock.now() - since).inSeconds)) s", channel: channel.id)
            case .gap(let from, let to):
                log.warning("the channel's feed skipped seq \(from + 1)\(to - from > 2 ? "...\(to - 1)" : "") (from \(from) to \(to))",
                            channel: channel.id)
            }
        }
    }
}
