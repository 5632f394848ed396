import APNs
import TouchlineCore
import TouchlineRuntime

/// Deleting a channel's APNs channel once its end is delivered and the grace period is over.
///
/// The deletion is a durable intent: the engine's phase `closed` is saved when it asks for it,
/// and the channel counts as deleted only once APNs confirms (204, or `ChannelNotRegistered`:
/// already gone). A failed call (429, 5xx, a lost connection, even a credentials problem an
/// operator may fix) is tried again with capped back-off for as long as the gateway runs, and
/// a restart picks up every closed channel still undeleted, so no channel leaks toward Apple's
/// 10,000-channel limit. Only an answer that can never succeed (`drop`: the request itself is
/// wrong) stops the retries, with an error log naming the channel. Before each attempt the
/// channel's kickoffs are cancelled and their sends in flight answered, so no start naming a
/// deleted channel reaches APNs.
extension ChannelService {
    /// Back-off between deletion attempts: 1 s doubling to 5 min, jitter half (a throttled
    /// management API recovers in seconds; a broken setup is tried every few minutes).
    static let deletionBackoff = Backoff(initial: .seconds(1), maximum: .seconds(300), multiplier: 2, jitter: 0.5)

    /// Asks APNs to delete the channel's APNs channel, retrying until it is confirmed.
    func deleteAtAPNs(_ channel: Channel) {
        guard let apnsID = channel.apnsChannelID, !channel.apnsDeleted, !isStopping, channels[channel.id] === channel else { return }
        channel.deletionTimer?.cancel()
        // No kickoff start naming the channel may still be on its way (KickoffChannels).
        personal.closeKickoffs(into: apnsID) { [self] in
            loop.execute { [self] in sendDeletion(of: channel, apnsID: apnsID) }
        }
    }

    private func sendDeletion(of channel: Channel, apnsID: String) {
        guard !isStopping, channels[channel.id] === channel, !channel.apnsDeleted else { return }
        dispatcher.deleteChannel(apnsID) { [self] result in
            guard channels[channel.id] === channel, !channel.apnsDeleted else { return }
            switch result {
            case .success:
                deletionConfirmed(channel)
            case .failure(let error) where error.disposition == .channelGone:
                deletionConfirmed(channel)
            case .failure(let error) where error.disposition == .drop:
                log.error("APNs refused to delete channel \(apnsID) for good; it is left to an operator", channel: channel.id,
                          apnsID: error.requestID, error: error)
            case .failure(let error):
                channel.deletionAttempts += 1
                let delay = Self.deletionBackoff.delay(attempt: channel.deletionAttempts - 1)
                log.warning("deleting APNs channel \(apnsID) failed; trying again in \(delay.inSeconds) s (attempt \(channel.deletionAttempts))",
                            channel: channel.id, apnsID: error.requestID, error: error)
                let timer = channel.deletionTimer ?? LoopTimer(loop: loop) { [self] in deleteAtAPNs(channel) }
                channel.deletionTimer = timer
                timer.schedule(after: delay)
            }
        }
    }

    private func deletionConfirmed(_ channel: Channel) {
        channel.apnsDeleted = true
        channel.deletionAttempts = 0
        channel.deletionTimer = nil
        saveStatus(of: channel)
        eventStream?.channelChanged()
    }
}
