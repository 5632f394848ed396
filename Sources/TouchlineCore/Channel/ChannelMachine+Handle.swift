extension ChannelMachine {
    /// Takes one input at `now`; returns what the shell performs, in order.
    public mutating func handle(_ input: Input, now: UnixTime) -> [Action] {
        switch input {
        case .request(let request, let room, let storeWritable):
            return take(request, room: room, storeWritable: storeWritable, now: now)
        case .writeCompleted(let succeeded, let room, let storeWritable):
            return writeCompleted(succeeded: succeeded, room: room, storeWritable: storeWritable, now: now)
        case .pushAnswered(let sequence, let outcome):
            return pass(.pushAnswered(sequence: sequence, outcome), now: now)
        case .timerFired(let timer):
            armed[timer] = nil
            return timerFired(timer, now: now)
        case .ownershipChanged(let ownership):
            self.ownership = ownership
            return []
        case .lifecycle(let input):
            return lifecycle(input, now: now)
        case .deleteRequested:
            return [deleteRequested()]
        case .rolloverRequested(let storeWritable):
            return [requestRollover(storeWritable: storeWritable, now: now)]
        case .rolloverSaved(let save, let succeeded):
            return rolloverSaved(save, succeeded: succeeded, now: now)
        case .rolloverStep(let outcome):
            return rolloverStep(outcome, now: now)
        case .audienceKnown:
            hasAudience = true
            return checkRollover(now: now)
        case .resumed:
            return resume(now: now)
        case .stopped:
            isStopped = true
            defer { armed = [:] }
            return Timer.allCases.filter { armed[$0] != nil }.map(Action.cancel)
        }
    }

    /// A provider's delete waits for a create under way; otherwise every APNs channel the
    /// channel holds goes with it (an id APNs gave that the store never took too, so it does not leak).
    private func deleteRequested() -> Action {
        guard !lifecycle.isCreateUnderWay else { return .refuseDeleteWhileCreating }
        let deletedAtAPNs = if case .deleted = lifecycle.stage { true } else { false }
        return .delete(Deletion(apnsChannel: isShadow ? nil : lifecycle.apnsChannelToDelete, rolloverChannel: rollover.otherChannel,
                                reportsDeletion: !deletedAtAPNs))
    }

    private mutating func timerFired(_ timer: Timer, now: UnixTime) -> [Action] {
        switch timer {
        case .engine:
            return pass(.engineTimer, now: now)
        case .feed:
            guard !isStopped else { return [] }
            guard let report = feed.check(now: now, live: isFeedLive) else { return watchFeed(now: now) }
            return [.reportStall(report)]
        case .rollover:
            guard !isStopped else { return [] }
            if rolloverRetryArmed {
                rolloverRetryArmed = false
                return performRollover(rollover.retryDue(isLive: isMatchLive), now: now)
            }
            return checkRollover(now: now)
        case .deletionRetry:
            guard !isStopped else { return [] }
            return lifecycle(.deletionRetryDue, now: now)
        }
    }

    private mutating func resume(now: UnixTime) -> [Action] {
        guard lifecycle.isLive else { return [] }
        var actions = performEngine(state.engine.tick(now: now), now: now)
        actions += watchFeed(now: now)
        if !isShadow {
            actions += performRollover(rollover.resumed(isLive: isMatchLive), now: now)
            actions += checkRollover(now: now)
        }
        // A deletion asked for before the restart and not confirmed: ask again.
        if state.engine.phase == .closed { actions += lifecycle(.deletionDue, now: now) }
        return actions
    }

    // MARK: Lifecycle

    /// Gives the lifecycle `input` and turns what it asks for into the channel's actions.
    mutating func lifecycle(_ input: Lifecycle.Input, now: UnixTime) -> [Action] {
        var actions: [Action] = []
        for action in lifecycle.handle(input) {
            switch action {
            case .openKickoffs:
                persistedStatus = .active
                actions.append(.lifecycle(action))
                actions += checkRollover(now: now)
            case .deleteAtAPNs:
                guard !isStopped else { continue }
                actions += cancel(.deletionRetry)
                actions.append(.lifecycle(action))
            case .armDeletionRetry(let delay):
                actions.append(.lifecycle(action))
                actions += arm(.deletionRetry, at: now + delay)
            case .saveStatus:
                actions += saveStatus()
            default:
                actions.append(.lifecycle(action))
            }
        }
        return actions
    }

    // MARK: Timers and status

    mutating func arm(_ timer: Timer, at time: UnixTime) -> [Action] {
        guard !isStopped else { return [] }
        armed[timer] = time
        return [.arm(timer, at: time)]
    }

    mutating func cancel(_ timer: Timer) -> [Action] {
        armed[timer] = nil
        return [.cancel(timer)]
    }

    /// The status, when it changed since it was last written.
    mutating func saveStatus() -> [Action] {
        let status = status
        guard status != persistedStatus, status != .creating else { return [] }
        persistedStatus = status
        return [.saveStatus(status)]
    }

    /// A failed fire-and-forget save is made again, whole: the status it writes is the one
    /// saved from now on (`.creating` is never written by a save).
    public mutating func statusForSaveAgain() -> ChannelStatus? {
        guard status != .creating else { return nil }
        persistedStatus = status
        return status
    }

    /// Arms the feed timer for the moment the feed would turn stalled, or stops it.
    mutating func watchFeed(now: UnixTime) -> [Action] {
        guard !isStopped, let deadline = feed.stallDeadline(live: isFeedLive) else { return cancel(.feed) }
        return arm(.feed, at: deadline)
    }

    var isMatchLive: Bool { state.engine.phase == .live }
}
