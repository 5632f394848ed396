import APNs
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Acknowledged channel input (events, ends): a 202 means stored, and a failed commit changes
/// nothing.
///
/// Each channel has at most one such write in the store at a time. The write is built on a copy
/// of the channel (``ChannelWrite``) and reaches the channel's memory (engine,
/// content-state, last `seq`, counters) only together with its commit; pushes it asks for go
/// out only then, so nothing reaches APNs that is not on disk. While it is out:
/// - the engine takes no input: APNs answers and timer fires are held and fed to it afterwards,
///   so a failed write leaves the engine exactly as it was;
/// - further requests for the channel wait (at most ``CommitGate/maximumWaiting``) and are
///   validated when the write completes, against what it left, all in the next write: one
///   commit for however many came meanwhile.
///
/// When the commit fails, every request of the write is answered 503 with `Retry-After` and
/// their retry is stored like any first attempt. While the store is failing (``StoreHealth``)
/// new input is refused at once, until the writer's probe finds the disk writable again. The
/// rule itself is ``CommitGate``'s (TouchlineCore), tested in virtual time.
extension ChannelService {
    /// Takes an events or end request for `channel` (already authorized and found).
    func take(_ input: ChannelRequest, for channel: Channel) {
        do throws(HTTPError) {
            if let damage = channel.damage { throw HTTPError(status: 409, code: "channel_broken", message: damage) }
            guard channel.apnsChannelID != nil else {
                throw HTTPError(status: 409, code: "channel_not_ready", message: "the channel is still being created at APNs")
            }
            try requireWritableStore()
            switch channel.gate.admit(input) {
            case .write: break
            case .queued: return
            case .busy:
                let limit = CommitGate<ChannelRequest, ChannelInput>.maximumWaiting
                throw HTTPError(status: 503, code: "channel_busy",
                                message: "channel '\(channel.id)' has \(limit) requests waiting for the store; send one request at a time per channel",
                                headers: [("Retry-After", "1")])
            }
        } catch {
            return refuse(input, error)
        }
        startWrite(of: [input], for: channel)
    }

    /// 503 with `Retry-After` while `store` (default: the channel store) cannot write.
    func requireWritableStore(_ store: (any DurableStoreWriter)? = nil) throws(HTTPError) {
        try (store ?? self.store).requireWritable()
    }

    private func refuse(_ input: ChannelRequest, _ error: HTTPError) {
        if case .events = input { metrics.rejectedEvents[error.code, default: 0] += 1 }
        input.request.respond(error.response)
    }

    /// Validates `inputs` in order on a copy of the channel and stores what they change as one write.
    private func startWrite(of inputs: [ChannelRequest], for channel: Channel) {
        let now = clock.now()
        var write = ChannelWrite(for: channel, recordingRoom: channel.recording.map { _ in
            recordingLedger.room(for: channel.id, events: channel.recordedEvents)
        })
        for input in inputs {
            do throws(HTTPError) { try write.add(input, to: channel, now: now) } catch { refuse(input, error) }
        }
        if write.isEmpty {
            // Only duplicates and stale events: nothing to store, and nothing earlier is uncommitted.
            channel.activity.duplicateEvents += write.duplicates
            for (request, answer) in write.answers { request.respond(response(answer, channel)) }
            return
        }
        channel.gate.writeStarted()
        recordingLedger.reserve(write.loggedBytes, for: channel.id)
        let submitted = BroadcastPressure.now()
        var batch = write.batch(channelID: channel.id, now: now)
        let budgetMemo = (channel.downgradesSeen, channel.budgetExhaustedReportedAt)
        for event in budgetExhaustedEvent(of: channel, engine: write.engine) { batch.append(event) }
        // The feed's recovery and gaps commit with the events that show them.
        var watched = channel.feed
        let feedReports = watched.eventsAccepted(previousSeq: channel.lastSeq, seqs: write.events.map(\.seq), at: now)
        let feed = watched
        for event in feedEvents(feedReports, of: channel) { batch.append(event) }
        store.submit(batch) { [self, write] result in
            loop.execute { [self] in
                broadcastPressure.observeWait(since: submitted)
                // Nothing of a failed write happened, its downgrades neither.
                if case .failure = result { (channel.downgradesSeen, channel.budgetExhaustedReportedAt) = budgetMemo }
                // Before the completion, which may start the next write from the watch.
                let applied = if case .success = result { channels[channel.id] === channel } else { false }
                if applied { channel.feed = feed }
                complete(write, of: channel, result)
                if applied {
                    note(feedReports, of: channel)
                    watchFeed(of: channel)
                }
            }
        }
    }

    /// The write's commit answered: apply it (or not), feed the engine what it held back, then
    /// take the requests that waited.
    private func complete(_ write: ChannelWrite, of channel: Channel, _ result: Result<Void, StoreError>) {
        let succeeded = if case .success = result { true } else { false }
        let completion = channel.gate.writeCompleted(succeeded: succeeded)
        let isCurrent = channels[channel.id] === channel
        switch result {
        case .success:
            channel.engine = write.engine
            channel.contentState = write.contentState
            channel.lastSeq = write.lastSeq
            if channel.recording != nil { recorded(write, on: channel) }
            if let status = write.endedStatus {
                channel.persistedStatus = status
                // The end is durable: no kickoff start may subscribe devices to this channel any more.
                if let apnsID = channel.apnsChannelID { personal(of: channel).closeKickoffs(into: apnsID) }
            }
            channel.activity.duplicateEvents += write.duplicates
            if let accepted = write.firstAcceptedAt { channel.activity.eventsAccepted(at: accepted) }
            for (request, answer) in write.answers { request.respond(response(answer, channel)) }
            // The state is already saved with the write: the engine's own `.persist` is skipped.
            if isCurrent { perform(write.actions.filter { if case .persist = $0 { false } else { true } }, on: channel) }
        case .failure(let error):
            if isCurrent { recordingLedger.release(write.loggedBytes, for: channel.id) }
            let refusal = HTTPError.writeFailed(error, saving: "the channel's input")
            if error.isStorageFailure { log.error("a channel write failed; nothing of it was applied", channel: channel.id, error: error) }
            for (request, _) in write.answers {
                metrics.rejectedEvents[refusal.code, default: 0] += 1
                request.respond(refusal.response)
            }
        }
        if isCurrent { for input in completion.heldInputs { feed(input, to: channel) } }
        let waiting = completion.nextRequests
        guard !waiting.isEmpty else { return }
        if let failure = store.health.failure {
            for input in waiting { refuse(input, HTTPError.storeUnavailable(failure)) }
        } else if isCurrent {
            startWrite(of: waiting, for: channel)
        } else {
            for input in waiting { refuse(input, HTTPError(status: 404, code: "channel_not_found", message: "channel '\(channel.id)' was deleted")) }
        }
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
