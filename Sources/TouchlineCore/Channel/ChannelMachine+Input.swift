extension ChannelMachine {
    /// Everything a channel gets.
    public enum Input: Sendable {
        /// An events or end request (its key checked, its channel found). `storeWritable` is
        /// false while the store is failing; `room` is what the shell lends the write.
        case request(Request, room: Rules.Room, storeWritable: Bool)
        /// The store answered the write of ``Action/submit(_:feed:)``; `room` and
        /// `storeWritable` are for the next write, built from the requests that waited.
        case writeCompleted(succeeded: Bool, room: Rules.Room, storeWritable: Bool)
        /// APNs (or the gateway, for a shadow channel) answered push `sequence`.
        case pushAnswered(sequence: UInt64, PushOutcome)
        case timerFired(Timer)
        /// This gateway started or stopped acting for the channel (asked before every input in
        /// a cluster, where a lease can lapse between two).
        case ownershipChanged(Ownership)
        /// A step of the channel's life at APNs (its create, adoption, deletion) answered.
        case lifecycle(Lifecycle.Input)
        /// The provider deletes the channel (`DELETE /v1/channels/{id}`).
        case deleteRequested
        /// An operator asks for a rollover now (`POST .../rollover`); `storeWritable` is false
        /// while the store is failing.
        case rolloverRequested(storeWritable: Bool)
        /// A rollover's save (``Action/saveRollover(_:)`` or ``Action/beginRollover(_:)``)
        /// committed or failed.
        case rolloverSaved(RolloverSave, succeeded: Bool)
        /// A rollover's call out (``Action/rollover(_:)``) answered.
        case rolloverStep(RolloverOutcome)
        /// A kickoff gave the channel an audience to start again on a rollover.
        case audienceKnown
        /// The channel was loaded from the store (a restart, or a partition taken up): send what
        /// was pending, arm the timers, resume a rollover, ask again for a deletion that was due.
        case resumed
        /// Shutdown: nothing new goes out; what is pending stays in the snapshot.
        case stopped
    }

    /// How a rollover's call out went.
    public enum RolloverOutcome: Sendable, Equatable {
        /// APNs created the successor channel.
        case successorCreated(String)
        /// The successor is saved as the channel's APNs channel.
        case switched(to: String)
        /// The audience's start jobs are stored (or there was no audience to start).
        case audienceStarted
        /// The previous channel's activities are ended.
        case previousEnded
        /// The previous APNs channel is deleted.
        case previousDeleted
        /// The step failed (APNs, the store or the job queue): it is retried after a back-off.
        case failed
    }

    /// What a provider's delete removes besides the record: the APNs channels it must delete
    /// first, so none is left toward Apple's limit.
    public struct Deletion: Sendable, Equatable {
        /// The channel's APNs channel (also one APNs gave that the store never took); nil on a
        /// shadow channel and once APNs confirmed its deletion. Its kickoffs are closed first,
        /// and the record goes only once APNs deleted it.
        public var apnsChannel: String?
        /// The other APNs channel of a rollover under way (the previous one, or a successor not
        /// saved yet), deleted without waiting for the answer.
        public var rolloverChannel: String?
        /// The channel was not deleted at APNs yet: the deletion is reported to webhooks.
        public var reportsDeletion: Bool
    }

    /// Why an operator's rollover does not begin.
    public enum RolloverRefusal: Sendable, Equatable {
        /// A shadow channel has no APNs channel to roll over.
        case shadowChannel
        /// The match is not live (or the channel not active).
        case noLiveMatch
        /// No kickoff gave the channel an audience to start on a new channel.
        case noAudience
        case storeFailing
        /// One is under way.
        case underWay
        /// The last one began less than the minimum interval ago: the next may begin at `until`.
        case tooSoon(until: UnixTime)
    }

    /// A save of the rollover and what waits for its commit.
    public struct RolloverSave: Sendable, Equatable {
        /// The rollover's steps after the save.
        public var rest: [ActivityRollover.Action]
        /// Set for an operator's `POST .../rollover`: the last start before it, restored when
        /// its save fails (the request is refused and no rollover began).
        public var operatorStart: OperatorStart?

        public struct OperatorStart: Sendable, Equatable {
            public var previousStart: UnixTime?
        }
    }
}
