import APNs
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Where a channel's decisions are carried out: every input goes to the channel's
/// ``ChannelMachine`` (which holds the rules), and this performs the actions it returns, in
/// order: store writes, APNs calls, answers, the personal queue, loop timers. Answers coming
/// back are fed to the machine on the ingest loop, unless the channel was deleted or let go
/// meanwhile.
extension ChannelService {
    typealias Machine = Channel.Machine

    /// Gives the channel's machine `input`, after telling it whether this gateway acts for the
    /// channel at this instant (a cluster's lease can lapse between two inputs), and performs
    /// what it returns.
    func handle(_ input: Machine.Input, of channel: Channel) {
        perform(decide(input, of: channel), on: channel)
    }

    /// The machine's answer to `input`, not performed yet.
    func decide(_ input: Machine.Input, of channel: Channel) -> [Machine.Action] {
        let now = clock.now()
        // A channel loaded while the gateway stops (a partition taken up meanwhile) stops too.
        if isStopping, !channel.machine.isStopped { stop(channel, now: now) }
        let ownership: Machine.Ownership = ownership.actsFor(channel.id) ? .acting(fence: ownership.fence(for: channel.id)) : .notActing
        var actions: [Machine.Action] = []
        if channel.machine.ownership != ownership { actions += channel.machine.handle(.ownershipChanged(ownership), now: now) }
        return actions + channel.machine.handle(input, now: now)
    }

    /// Its machine sends and arms nothing more; the loop timers stop here (shutdown).
    func stop(_ channel: Channel, now: UnixTime) {
        _ = channel.machine.handle(.stopped, now: now)
        channel.cancelTimers()
    }

    /// Performs the machine's actions for `channel`, in order.
    func perform(_ actions: [Machine.Action], on channel: Channel) {
        for action in actions { perform(action, on: channel) }
        changeWatcher?.channelChanged()
    }

    func perform(_ action: Machine.Action, on channel: Channel) {
        switch action {
        case .submit(let write, let reports):
            submit(write, feedReports: reports, of: channel)
        case .answerAtOnce(let write):
            answerAtOnce(write, of: channel)
        case .answerCommitted(let write):
            answerCommitted(write, of: channel)
        case .answerFailed:
            // Only a commit's completion leads here, and it answers with the store's failure.
            break
        case .refuse(let request, let refusal):
            refuse(request, Self.refusal(refusal, of: channel, store: store))
        case .noteFeed(let reports):
            note(reports, of: channel)
        case .saveState:
            save(channel)
        case .saveStatus(let status):
            submitSave([.markStatus(channelID: channel.id, status: status, end: nil, at: clock.now())] + statusEvent(of: channel, status: status),
                       of: channel, what: "the channel status")
        case .reportStall(let report):
            note([report], of: channel)
            let events = feedEvents([report], of: channel)
            if !events.isEmpty { submitSave(events, of: channel, what: "the feed's stall") }
        case .send(let push, let apnsID, let fence):
            send(push, on: apnsID, fence: fence.flatMap { ownership.sideEffectFence(for: channel.id, fence: $0) }, of: channel)
        case .sendInShadow(let push):
            sendShadow(push, on: channel)
        case .pushAnswerTaken(let sequence, let outcome):
            recordAnswer(of: sequence, on: channel, outcome: outcome)
        case .closeKickoffs(let apnsID):
            personal(of: channel).closeKickoffs(into: apnsID)
        case .lifecycle(let action):
            perform(action, on: channel)
        case .rollover(let call):
            perform(call, on: channel)
        case .saveRollover(let save):
            saveRollover(of: channel) { [self] result in
                if case .failure(let error) = result {
                    log.error("saving the channel's rollover failed; the step is tried again", channel: channel.id, error: error)
                }
                handle(.rolloverSaved(save, succeeded: result.isSuccess), of: channel)
            }
        case .beginRollover, .refuseRollover, .delete, .refuseDeleteWhileCreating:
            // Only the provider's or operator's request leads here, and its route answers it.
            break
        case .rolloverWaitsForOwnership:
            log.notice("the rollover's step waits: this gateway does not act for the channel at this instant", channel: channel.id)
        case .arm(let timer, let time):
            let loopTimer = channel.timers[timer] ?? LoopTimer(loop: loop) { [self] in
                guard channels[channel.id] === channel else { return }
                handle(.timerFired(timer), of: channel)
            }
            channel.timers[timer] = loopTimer
            let delay = time - clock.now()
            loopTimer.schedule(after: delay > .zero ? delay : .zero)
        case .cancel(let timer):
            channel.timers[timer]?.cancel()
        }
    }

    // MARK: Pushes

    /// The last check of an APNs call for `channel` decided now: its partition's fence, as the
    /// channel's machine acts under it (nil on a gateway on its own).
    func sideEffectFence(of channel: Channel) -> (any SideEffectFence)? {
        guard case .acting(let fence?) = channel.machine.ownership else { return nil }
        return ownership.sideEffectFence(for: channel.id, fence: fence)
    }

    /// `fence` goes with the push to the moment its bytes leave: a push decided before this
    /// gateway lost the channel's partition (paused, cut off) is dropped there, not sent.
    private func send(_ push: ChannelEngine.OutgoingPush, on apnsID: String, fence: (any SideEffectFence)?, of channel: Channel) {
        channel.activity.pushSent(push, at: clock.now())
        dispatcher(of: channel).broadcast(push, on: apnsID, fence: fence) { [self] result in
            guard channels[channel.id] === channel else { return }
            handle(.pushAnswered(sequence: push.sequence, outcome(of: result, on: channel)), of: channel)
        }
    }

    /// An APNs answer to a publish as the machine takes it (a failure is logged as it comes).
    private func outcome(of result: Result<APNsResponse, APNsError>, on channel: Channel) -> Machine.PushOutcome {
        switch result {
        case .success:
            return .accepted
        case .failure(let error):
            log.warning("APNs broadcast failed", channel: channel.id, apnsID: error.requestID, error: error)
            return .failed(BroadcastDispatcher.pushFailure(for: error),
                           outcome: error.reason?.name ?? error.status.map { "HTTP\($0)" } ?? "no_response")
        }
    }

    /// Counts an answer the engine took, in the channel's recent pushes and the latency metric.
    private func recordAnswer(of sequence: UInt64, on channel: Channel, outcome: Machine.PushOutcome) {
        switch outcome {
        case .accepted: recordAnswer(of: sequence, on: channel, outcome: "accepted", retried: false)
        case .acceptedInShadow: recordAnswer(of: sequence, on: channel, outcome: "shadow", retried: false)
        case .failed(let failure, let name): recordAnswer(of: sequence, on: channel, outcome: name, retried: failure == .throttled || failure == .retryLater)
        }
    }

    /// The answer to a request the machine refused before building a write.
    private static func refusal(_ refusal: Machine.RequestRefusal, of channel: Channel, store: any ChannelStoreWriter) -> HTTPError {
        switch refusal {
        case .damaged(let reason):
            HTTPError(status: 409, code: "channel_broken", message: reason)
        case .notReady:
            HTTPError(status: 409, code: "channel_not_ready", message: "the channel is still being created at APNs")
        case .storeFailing:
            // The store's own answer; should it have recovered this instant, the same words.
            store.health.failure.map(HTTPError.storeUnavailable)
                ?? HTTPError(status: 503, code: "store_unavailable", message: "the store cannot write; nothing was stored, retry the same request",
                             headers: [("Retry-After", "1")])
        case .busy:
            HTTPError(status: 503, code: "channel_busy",
                      message: "channel '\(channel.id)' has \(CommitGate<ChannelRequest, Machine.HeldInput>.maximumWaiting) requests waiting for the store; "
                        + "send one request at a time per channel",
                      headers: [("Retry-After", "1")])
        }
    }
}
