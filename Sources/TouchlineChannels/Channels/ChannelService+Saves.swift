import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// The channel saves nobody waits for: the engine's state after a push was answered or a timer
/// fired, and status changes (ended, deleted, broken).
///
/// They are fire and forget, but not forgotten when they fail: a channel whose save failed (a
/// full disk) is saved again, whole (state and status), once a second has passed and the store
/// takes writes, until a save commits. Otherwise a channel that ended and was deleted while the
/// disk was full would come back from a later restart in its last committed state and send its
/// end again to a channel APNs no longer has.
extension ChannelService {
    /// How long a failed save waits before it is made again.
    static let saveRetryInterval = Duration.seconds(1)

    /// Writes the channel's state (the store keeps the order of writes). Deferrable: the store
    /// may commit it with the next write (``WriteBatch/deferrable``), so that a match's steady
    /// events cost one commit each, not one for the event and one for its push's bookkeeping.
    func save(_ channel: Channel) {
        submitSave([.updateState(channel.stateUpdate(at: clock.now()))] + budgetExhaustedEvent(of: channel, engine: channel.engine),
                   of: channel, what: "the channel", deferrable: true)
    }

    /// Saves `operations` with the webhook events an earlier failed save left; a failure keeps
    /// this save's events for the next one.
    func submitSave(_ operations: [StoreOperation], of channel: Channel, what: String, deferrable: Bool = false) {
        let operations = operations + channel.unsavedWebhookEvents
        channel.unsavedWebhookEvents = []
        store.submit(WriteBatch(operations, deferrable: deferrable)) { [self] result in
            guard case .failure(let error) = result else { return }
            loop.execute { [self] in
                // A channel deleted meanwhile has nothing left to save.
                guard channels[channel.id] === channel, !isStopping else { return }
                log.error("saving \(what) failed; it is saved again once the store takes writes", channel: channel.id, error: error)
                channel.unsavedWebhookEvents += operations.filter(\.isWebhook)
                noteFailedSave(of: channel)
            }
        }
    }

    private func noteFailedSave(of channel: Channel) {
        channel.needsSave = true
        channelsNeedingSave[channel.id] = channel
        let timer = saveRetryTimer ?? LoopTimer(loop: loop) { [self] in retryFailedSaves() }
        saveRetryTimer = timer
        if !timer.isScheduled { timer.schedule(after: Self.saveRetryInterval) }
    }

    /// Saves again, whole, every channel whose save failed (not while the store is failing, and
    /// not a channel whose acknowledged write is out: that write carries the whole state).
    private func retryFailedSaves() {
        guard !isStopping else { return }
        guard !store.health.isFailing else { return saveRetryTimer?.schedule(after: Self.saveRetryInterval) ?? () }
        let due = channelsNeedingSave.values.filter { !$0.machine.isWriting }
        for channel in due {
            channelsNeedingSave[channel.id] = nil
            guard channels[channel.id] === channel, channel.needsSave else { continue }
            channel.needsSave = false
            var operations: [StoreOperation] = [.updateState(channel.stateUpdate(at: clock.now()))]
            if let status = channel.machine.statusForSaveAgain() {
                operations.append(.markStatus(channelID: channel.id, status: status, end: nil, at: clock.now()))
            }
            submitSave(operations, of: channel, what: "the channel again")
        }
        if !channelsNeedingSave.isEmpty { saveRetryTimer?.schedule(after: Self.saveRetryInterval) }
    }
}
