extension ChannelMachine {
    /// What the shell performs, in order.
    public enum Action: Sendable {
        // MARK: Acknowledged writes

        /// Answer the write's refused requests, then store it; report ``Input/writeCompleted(succeeded:room:storeWritable:)``.
        /// `feed` is what the feed watch saw in its events (committed with them).
        case submit(Write, feed: [FeedWatch.Report])
        /// The write needs no storing (duplicates, stale events, refusals): answer it now.
        case answerAtOnce(Write)
        /// The write committed and is applied: answer its requests (202).
        case answerCommitted(Write)
        /// The write's commit failed: answer its requests with the failure; nothing was applied.
        case answerFailed(Write)
        /// Refuse a request without building a write.
        case refuse(Request, RequestRefusal)
        /// What the feed watch saw in a committed write (its events went with the write).
        case noteFeed([FeedWatch.Report])

        // MARK: Saves nobody waits for

        /// Save the engine's state (fire and forget).
        case saveState
        /// Save the status, changed since it was last written.
        case saveStatus(ChannelStatus)
        /// The feed turned stalled: report it (a save of its own).
        case reportStall(FeedWatch.Report)

        // MARK: APNs and the personal queue

        /// Publish `push` on the channel's APNs channel `apnsID`; report ``Input/pushAnswered(sequence:_:)``.
        /// Decided while acting for the channel under `fence`.
        case send(ChannelEngine.OutgoingPush, apnsID: String, fence: Fence?)
        /// The engine took the answer to push `sequence` (after any write that held it): count it.
        case pushAnswerTaken(sequence: UInt64, PushOutcome)
        /// A shadow channel's push: record it and report it accepted (``PushOutcome/acceptedInShadow``).
        case sendInShadow(ChannelEngine.OutgoingPush)
        /// APNs no longer knows the channel: no kickoff may start into `apnsID` any more.
        case closeKickoffs(String)
        /// A step of the channel's life at APNs (the store, APNs, the personal queue, answers).
        case lifecycle(Lifecycle.Action)
        /// A rollover's call out; report ``Input/rolloverStep(_:)``.
        case rollover(RolloverCall)
        /// Save the rollover (the channel's settings); report ``Input/rolloverSaved(_:succeeded:)``.
        case saveRollover(RolloverSave)
        /// Delete the channel for the provider: its APNs channels, then its record; answer the request.
        case delete(Deletion)
        /// The channel is being created at APNs: it can be deleted once that has answered.
        case refuseDeleteWhileCreating
        /// An operator's rollover may begin: save it and answer the request with the commit (a
        /// refusal of the shell's own is reported as a failed save: it did not begin).
        case beginRollover(RolloverSave)
        /// An operator's rollover does not begin.
        case refuseRollover(RolloverRefusal)
        /// A rollover step waits: this gateway does not act for the channel at this instant.
        case rolloverWaitsForOwnership

        // MARK: Timers

        /// Fire ``Input/timerFired(_:)`` at `at` (or at once when it has passed); replaces the
        /// timer's earlier deadline.
        case arm(Timer, at: UnixTime)
        case cancel(Timer)
    }

    /// Why a request was refused before any write was built.
    public enum RequestRefusal: Sendable, Equatable {
        /// The stored record could not be used (the reason).
        case damaged(String)
        /// The channel is still being created at APNs.
        case notReady
        /// The store cannot write now.
        case storeFailing
        /// ``CommitGate/maximumWaiting`` requests already wait behind the write.
        case busy
    }

    /// A rollover's call to APNs or the job queue.
    public enum RolloverCall: Sendable, Equatable {
        /// Create the successor APNs channel (the channel's storage policy).
        case createSuccessor
        /// Save `successor` as the channel's APNs channel together with the rollover, in one commit.
        case switchTo(successor: String)
        /// Store the jobs that start the audience on the current APNs channel, ids of `generation`.
        case startAudience(generation: Int)
        /// End the activities on `previous` with `push`.
        case endPrevious(String, push: ChannelEngine.OutgoingPush)
        /// Close the kickoffs into `previous`, then delete it at APNs.
        case deletePrevious(String)
        /// Delete an APNs channel created for a match that ended meanwhile (no answer needed).
        case deleteUnneeded(String)
    }
}
