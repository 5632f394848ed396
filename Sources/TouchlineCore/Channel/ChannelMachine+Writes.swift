/// Acknowledged input (events, ends): "202 means stored", and a failed commit changes nothing.
///
/// One write of the channel is in the store at a time (``CommitGate``). It is built on a copy of
/// the channel's state and reaches the machine's state only with its commit, together with what
/// the feed watch saw in it; the pushes it asks for are decided only then. Requests that come
/// meanwhile wait and are validated, against what the write left, in the next write.
extension ChannelMachine {
    mutating func take(_ request: Request, room: Rules.Room, storeWritable: Bool, now: UnixTime) -> [Action] {
        if let damage { return [.refuse(request, .damaged(damage))] }
        guard apnsChannelID != nil else { return [.refuse(request, .notReady)] }
        guard storeWritable else { return [.refuse(request, .storeFailing)] }
        switch gate.admit(request) {
        case .write: return startWrite(of: [request], room: room, now: now)
        case .queued: return []
        case .busy: return [.refuse(request, .busy)]
        }
    }

    /// Validates `requests` in order on a copy of the state and stores what they change as one write.
    private mutating func startWrite(of requests: [Request], room: Rules.Room, now: UnixTime) -> [Action] {
        let lifecycle = lifecycle
        let write = rules.write(requests, on: state, room: room, now: now) { lifecycle.status(enginePhase: $0.phase) }
        // Only duplicates, stale events and refusals: nothing to store, nothing earlier uncommitted.
        guard !write.isEmpty else { return [.answerAtOnce(write)] }
        gate.writeStarted()
        // The feed's recovery and gaps commit with the events that show them.
        var watched = feed
        let reports = watched.eventsAccepted(previousSeq: state.lastSeq, seqs: write.acceptedSeqs, at: now)
        outstanding = Outstanding(write: write, feed: watched, reports: reports)
        return [.submit(write, feed: reports)]
    }

    /// The write's commit answered: apply it (or not), feed the engine what the gate held back,
    /// then write the requests that waited.
    mutating func writeCompleted(succeeded: Bool, room: Rules.Room, storeWritable: Bool, now: UnixTime) -> [Action] {
        guard let outstanding else { return [] }
        self.outstanding = nil
        let write = outstanding.write
        let completion = gate.writeCompleted(succeeded: succeeded)
        var actions: [Action] = []
        if completion.apply {
            feed = outstanding.feed
            state = write.state
            if let ended = write.endedStatus {
                persistedStatus = ended
                // The end is durable: no kickoff start may subscribe devices to this channel any more.
                if let apnsID = apnsChannelID { actions.append(.closeKickoffs(apnsID)) }
            }
            actions.append(.answerCommitted(write))
            // The state is already saved with the write: the engine's own persist is not needed.
            actions += performEngine(write.engineActions.filter { if case .persist = $0 { false } else { true } }, now: now)
        } else {
            actions.append(.answerFailed(write))
        }
        for input in completion.heldInputs { actions += feedEngine(input, now: now) }
        let waiting = completion.nextRequests
        if !waiting.isEmpty {
            if storeWritable {
                actions += startWrite(of: waiting, room: room, now: now)
            } else {
                actions += waiting.map { .refuse($0, .storeFailing) }
            }
        }
        if completion.apply {
            if !outstanding.reports.isEmpty { actions.append(.noteFeed(outstanding.reports)) }
            actions += watchFeed(now: now)
        }
        return actions
    }

}
