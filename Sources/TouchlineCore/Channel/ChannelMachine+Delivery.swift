/// The engine's side: its inputs pass the commit gate, and its actions become the channel's.
/// A push is decided only while this gateway acts for the channel.
extension ChannelMachine {
    /// Gives the engine an input, or holds it while a write of the channel is in the store (the
    /// engine must stay as the last commit left it until the write completes).
    mutating func pass(_ input: HeldInput, now: UnixTime) -> [Action] {
        guard gate.pass(input) else { return [] }
        return feedEngine(input, now: now)
    }

    mutating func feedEngine(_ input: HeldInput, now: UnixTime) -> [Action] {
        switch input {
        case .engineTimer:
            return performEngine(state.engine.tick(now: now), now: now)
        case .pushAnswered(let sequence, let outcome):
            let actions: [ChannelEngine.Action] = switch outcome {
            case .accepted, .acceptedInShadow: state.engine.pushSucceeded(sequence: sequence, now: now)
            case .failed(let failure, _): state.engine.pushFailed(sequence: sequence, failure, now: now)
            }
            return [.pushAnswerTaken(sequence: sequence, outcome)] + performEngine(actions, now: now)
        }
    }

    /// Turns the engine's actions into the channel's, in order, then saves what changed.
    mutating func performEngine(_ engineActions: [ChannelEngine.Action], now: UnixTime) -> [Action] {
        var queue = engineActions[...]
        var actions: [Action] = []
        var needsSave = false
        while let action = queue.popFirst() {
            if isStopped, action.isOutgoing { continue }
            switch action {
            case .send(let push):
                guard let apnsID = apnsChannelID else { continue }
                guard case .acting(let fence) = ownership else {
                    // The lease lapsed at this instant: the push goes back to the engine as one to
                    // try again after a back-off (by then the lease is renewed and it goes, or the
                    // channel has moved and the next owner sends it).
                    queue += state.engine.pushFailed(sequence: push.sequence, .retryLater, now: now)
                    continue
                }
                actions.append(isShadow ? .sendInShadow(push) : .send(push, apnsID: apnsID, fence: fence))
            case .armTimer(let time):
                actions += arm(.engine, at: time)
            case .persist:
                needsSave = true
            case .deleteChannel:
                actions += lifecycle(.deletionDue, now: now)
            case .markBroken(let reason):
                brokenReason = reason
                if let apnsID = apnsChannelID { actions.append(.closeKickoffs(apnsID)) }
            }
        }
        if needsSave { actions.append(.saveState) }
        return actions + saveStatus()
    }
}

extension ChannelEngine.Action {
    /// Actions that start something new: skipped once the channel is stopped.
    fileprivate var isOutgoing: Bool {
        switch self {
        case .send, .armTimer, .deleteChannel: true
        case .persist, .markBroken: false
        }
    }
}
