import APNs
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore

/// Acknowledged channel input (events, ends): a 202 means stored, and a failed commit changes
/// nothing.
///
/// Each channel has at most one such write in the store at a time. The write is built on a copy
/// of the channel's state (``ChannelWrite``) and reaches the channel (engine, content-state,
/// last `seq`, counters) only together with its commit; pushes it asks for go out only then, so
/// nothing reaches APNs that is not on disk. While it is out:
/// - the engine takes no input: APNs answers and timer fires are held and fed to it afterwards,
///   so a failed write leaves the engine exactly as it was;
/// - further requests for the channel wait (at most ``CommitGate/maximumWaiting``) and are
///   validated when the write completes, against what it left, all in the next write: one
///   commit for however many came meanwhile.
///
/// When the commit fails, every request of the write is answered 503 with `Retry-After` and
/// their retry is stored like any first attempt. While the store is failing (``StoreHealth``)
/// new input is refused at once, until the writer's probe finds the disk writable again. The
/// rules are the channel's machine's (``ChannelMachine``, TouchlineCore), tested in virtual
/// time; this is the I/O.
extension ChannelService {
    /// Takes an events or end request for `channel` (already authorized and found).
    func take(_ input: ChannelRequest, for channel: Channel) {
        handle(.request(input, room: recordingRoom(of: channel), storeWritable: !store.health.isFailing), of: channel)
    }

    /// 503 with `Retry-After` while `store` (default: the channel store) cannot write.
    func requireWritableStore(_ store: (any DurableStoreWriter)? = nil) throws(HTTPError) {
        try (store ?? self.store).requireWritable()
    }

    func refuse(_ input: ChannelRequest, _ error: HTTPError) {
        if case .events = input { metrics.rejectedEvents[error.code, default: 0] += 1 }
        input.request.respond(error.response)
    }

    /// What the channel's recording may still keep of its next write (nil when it does not record).
    private func recordingRoom(of channel: Channel) -> RecordingLedger.Room? {
        channel.recording.map { _ in recordingLedger.room(for: channel.id, events: channel.recordedEvents) }
    }

    /// Answers the write's refused requests and stores the rest as one batch, with the webhook
    /// events it shows (a budget exhausted, the feed's recovery and gaps).
    func submit(_ write: ChannelWrite, feedReports: [FeedWatch.Report], of channel: Channel) {
        for (request, error) in write.refusals { refuse(request, error) }
        let now = clock.now()
        recordingLedger.reserve(write.loggedBytes, for: channel.id)
        let submitted = BroadcastPressure.now()
        var batch = write.batch(channelID: channel.id, now: now)
        let budgetMemo = (channel.downgradesSeen, channel.budgetExhaustedReportedAt)
        for event in budgetExhaustedEvent(of: channel, engine: write.engine) { batch.append(event) }
        for event in feedEvents(feedReports, of: channel) { batch.append(event) }
        store.submit(batch) { [self, write] result in
            loop.execute { [self] in
                broadcastPressure.observeWait(since: submitted)
                // Nothing of a failed write happened, its downgrades neither.
                if case .failure = result { (channel.downgradesSeen, channel.budgetExhaustedReportedAt) = budgetMemo }
                writeCompleted(write, of: channel, result)
            }
        }
    }

    /// The write's commit answered: the recording counts what it kept, then the machine applies
    /// it (or not), feeds the engine what it held back, and takes the requests that waited.
    private func writeCompleted(_ write: ChannelWrite, of channel: Channel, _ result: Result<Void, StoreError>) {
        let isCurrent = channels[channel.id] === channel
        if case .success = result, channel.recording != nil { recorded(write, on: channel) }
        if case .failure(let error) = result {
            if isCurrent { recordingLedger.release(write.loggedBytes, for: channel.id) }
            if error.isStorageFailure { log.error("a channel write failed; nothing of it was applied", channel: channel.id, error: error) }
        }
        let completed = Machine.Input.writeCompleted(succeeded: result.isSuccess, room: recordingRoom(of: channel),
                                                     storeWritable: isCurrent && !store.health.isFailing)
        for action in decide(completed, of: channel) {
            if case .answerFailed(let write) = action, case .failure(let error) = result {
                answerFailed(write, HTTPError.writeFailed(error, saving: "the channel's input"))
            } else if isCurrent {
                perform(action, on: channel)
            } else {
                // Deleted or let go meanwhile: its requests are answered, nothing else is done.
                switch action {
                case .answerCommitted(let write): answerCommitted(write, of: channel)
                case .refuse(let request, _):
                    refuse(request, store.health.failure.map(HTTPError.storeUnavailable)
                        ?? HTTPError(status: 404, code: "channel_not_found", message: "channel '\(channel.id)' was deleted"))
                default: break
                }
            }
        }
        if isCurrent { changeWatcher?.channelChanged() }
    }

    /// A write whose commit failed: nothing of it was applied; every request gets the failure.
    private func answerFailed(_ write: ChannelWrite, _ refusal: HTTPError) {
        for (request, _) in write.answers {
            metrics.rejectedEvents[refusal.code, default: 0] += 1
            request.respond(refusal.response)
        }
    }

    /// A write with nothing to store: its answers go at once.
    func answerAtOnce(_ write: ChannelWrite, of channel: Channel) {
        for (request, error) in write.refusals { refuse(request, error) }
        channel.activity.duplicateEvents += write.duplicates
        for (request, answer) in write.answers { request.respond(response(answer, channel)) }
    }

    /// A committed write, applied: its requests are answered 202.
    func answerCommitted(_ write: ChannelWrite, of channel: Channel) {
        channel.activity.duplicateEvents += write.duplicates
        if let accepted = write.firstAcceptedAt { channel.activity.eventsAccepted(at: accepted) }
        for (request, answer) in write.answers { request.respond(response(answer, channel)) }
    }

    /// A committed write's recorded events; a write that left some out stops the recording.
    private func recorded(_ write: ChannelWrite, on channel: Channel) {
        channel.recordedEvents += write.loggedEvents.count
        channel.recordedBytes += write.loggedBytes
        guard write.cutsRecording, !channel.recordingStopped else { return }
        channel.recordingStopped = true
        let byQuota = channel.recordedEvents < FeedRecording.maximumEvents
        recordingLedger.stop(channel.id, byQuota: byQuota)
        log.warning(byQuota ? "the channel's recording stopped at \(channel.recordedBytes) bytes: its key's or the gateway's recording quota "
                        + "(recordings.maxRecordedBytesPerKey, recordings.maxRecordedBytes) is reached; later events are applied, not recorded"
                        : "the channel's recording stopped at its \(FeedRecording.maximumEvents) events; later events are applied, not recorded",
                    channel: channel.id)
    }

    private func response(_ answer: ChannelWrite.Answer, _ channel: Channel) -> HTTPResponse {
        switch answer {
        case .fixed(let body): .json(status: 202, body)
        case .channel: .json(status: 202, channel.json(now: clock.now()))
        }
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}
