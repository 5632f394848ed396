/// The rollover past Apple's 8-hour limit, as the channel runs it: every step that calls out
/// (APNs, the job queue) waits for this gateway to act for the channel, and every step after a
/// save waits for that save's commit (``RolloverSave`` carries the rest). The rules of the steps
/// are ``ActivityRollover``'s.
extension ChannelMachine {
    /// Looks at the rollover again: after a change of what it depends on (the channel became
    /// active, a kickoff came, the match went live) and when its timer fires.
    mutating func checkRollover(now: UnixTime) -> [Action] {
        guard !isShadow, lifecycle.isLive else { return [] }
        let canRoll = hasAudience && isMatchLive && status == .active
        return performRollover(rollover.check(now: now, maximumAge: policy.maximumActivityAge, minimumInterval: minimumRolloverInterval,
                                              canRoll: canRoll), now: now)
    }

    /// An operator asks for a rollover now, whatever the activities' age: it needs a live match
    /// with a known audience, a writable store, none under way and the minimum interval since
    /// the last. It begins with its save (``Action/beginRollover(_:)``).
    mutating func requestRollover(storeWritable: Bool, now: UnixTime) -> Action {
        guard !isShadow else { return .refuseRollover(.shadowChannel) }
        guard lifecycle.isLive, isMatchLive else { return .refuseRollover(.noLiveMatch) }
        guard hasAudience else { return .refuseRollover(.noAudience) }
        guard storeWritable else { return .refuseRollover(.storeFailing) }
        let previous = rollover.lastStartedAt
        switch rollover.start(now: now, minimumInterval: minimumRolloverInterval) {
        case .success(let actions):
            return .beginRollover(RolloverSave(rest: Array(actions.dropFirst()), operatorStart: .init(previousStart: previous)))
        case .failure(.underWay):
            return .refuseRollover(.underWay)
        case .failure(.tooSoon(let earliest)):
            return .refuseRollover(.tooSoon(until: earliest))
        }
    }

    /// Turns the rollover's steps into the channel's actions, in order; after a save, the rest
    /// waits for its commit.
    mutating func performRollover(_ steps: [ActivityRollover.Action], now: UnixTime) -> [Action] {
        guard !isStopped else { return [] }
        var actions: [Action] = []
        for (index, step) in steps.enumerated() {
            if step.callsOut, !ownership.isActing {
                // The step fails and is tried again after the back-off (the lease renewed, or the
                // channel moved on).
                return actions + [.rolloverWaitsForOwnership] + performRollover(rollover.stepFailed(now: now), now: now)
            }
            switch step {
            case .persist:
                return actions + [.saveRollover(RolloverSave(rest: Array(steps[(index + 1)...]), operatorStart: nil))]
            case .createSuccessor:
                actions.append(.rollover(.createSuccessor))
            case .switchTo(let successor):
                actions.append(.rollover(.switchTo(successor: successor)))
            case .startAudience(let generation):
                actions.append(.rollover(.startAudience(generation: generation)))
            case .endPrevious(let previous):
                actions.append(.rollover(.endPrevious(previous, push: state.engine.previousChannelEnd(state: state.contentState, now: now))))
            case .deletePrevious(let previous):
                actions.append(.rollover(.deletePrevious(previous)))
            case .deleteUnneeded(let apnsID):
                actions.append(.rollover(.deleteUnneeded(apnsID)))
            case .armTimer(let time), .armRetry(let time):
                rolloverRetryArmed = if case .armRetry = step { true } else { false }
                actions += arm(.rollover, at: time)
            }
        }
        return actions
    }

    mutating func rolloverSaved(_ save: RolloverSave, succeeded: Bool, now: UnixTime) -> [Action] {
        guard succeeded else {
            if let start = save.operatorStart {
                rollover.startNotSaved(previous: start.previousStart)
                return []
            }
            return performRollover(rollover.stepFailed(now: now), now: now)
        }
        return performRollover(save.rest, now: now)
    }

    mutating func rolloverStep(_ outcome: RolloverOutcome, now: UnixTime) -> [Action] {
        switch outcome {
        case .successorCreated(let successor):
            guard let current = apnsChannelID else { return performRollover(rollover.stepFailed(now: now), now: now) }
            return performRollover(rollover.successorCreated(successor, replacing: current, isLive: isMatchLive, now: now), now: now)
        case .switched(let successor):
            let actions = lifecycle(.rolledOver(to: successor), now: now)
            return actions + performRollover(rollover.switched(isLive: isMatchLive), now: now)
        case .audienceStarted:
            return performRollover(rollover.audienceStarted(), now: now)
        case .previousEnded:
            return performRollover(rollover.previousEnded(), now: now)
        case .previousDeleted:
            return performRollover(rollover.previousDeleted(maximumAge: policy.maximumActivityAge, minimumInterval: minimumRolloverInterval),
                                   now: now)
        case .failed:
            return performRollover(rollover.stepFailed(now: now), now: now)
        }
    }
}

extension ActivityRollover.Action {
    /// The step asks APNs or the job queue for something (what only the channel's owner may do).
    fileprivate var callsOut: Bool {
        switch self {
        case .createSuccessor, .startAudience, .endPrevious, .deletePrevious, .deleteUnneeded: true
        case .persist, .switchTo, .armTimer, .armRetry: false
        }
    }
}
