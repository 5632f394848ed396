import TouchlineCore
import TouchlineJetStream

/// What the simulated gateways, providers and servers hold (``ClusterSimulation``).
extension ClusterSimulation {
    /// One gateway process: its fences, and per partition what its store and engines know. A
    /// restart makes a new one (a new `run`: what was addressed to the old one is lost).
    final class Gateway {
        let fences: PartitionFences
        let views: [PartitionView]
        let run: Int
        /// Writes made, for message ids and write numbers.
        var writes = 0
        /// Pushes leave one after another: the next is written no earlier than this.
        var pushFreeAt: Int64 = 0
        /// The link to the servers is cut until then: what is sent either way waits in it.
        var linkHeldUntil: Int64?
        /// Messages waiting in the cut link arrive in order: the next no earlier than this.
        var linkFreeAt: Int64 = 0

        init(fences: PartitionFences, partitions: Int, run: Int) {
            self.fences = fences
            views = (0..<partitions).map { _ in PartitionView() }
            self.run = run
        }
    }

    /// One gateway's view of one partition: its log as read, its channels' states, what it serves.
    final class PartitionView {
        /// Served under this fence (its takeover record is stored); nil: not served.
        var fence: Fence?
        /// A takeover under way under this fence.
        var takingOver: Fence?
        var takeoverAttempts = 0
        var lastSequence: UInt64 = 0
        /// The log may hold what this gateway has not read: read before the next write.
        var stale = false
        /// Per channel, the newest event in the log as read.
        var states: [Int: Int] = [:]
        /// Per channel, the newest state pushed under `fence`.
        var decided: [Int: Int] = [:]
        /// The one write in flight.
        var writing: Write?
        /// Events waiting for the next write.
        var waiting: [Waiter] = []
        /// The number of the slice run this partition's job may go on with (a new run, or a stop,
        /// makes every earlier one's steps do nothing).
        var slice = 0
        var sliceRun: SliceRun?
        /// Reads of the log asked for and not answered, by number.
        var pendingReads: [Int: LogReading] = [:]
        var reads = 0
        /// Saves made, by number.
        var saves = 0
    }

    /// A provider's event waiting for its write.
    struct Waiter {
        let channel: Int
        let seq: Int
        let attempt: Int
    }

    /// A write to a partition's log: a batch of events, or a takeover record.
    struct Write {
        let id: Int
        let messageID: String
        let payload: [UInt8]
        /// A takeover record's fence.
        let takeover: Fence?
        let fence: Fence
        let expected: UInt64
        let startedAt: ContinuousClock.Instant
        let waiters: [Waiter]
        var attempt = 0
    }

    /// A publish on its way to the servers.
    struct Publish {
        let messageID: String
        let payload: [UInt8]
        let takeover: Fence?
        /// The fence it was sent under (recorded by the simulation's server, for the checks).
        let fence: Fence
        let expected: UInt64
    }

    /// A push to APNs: a channel's state, or a token of a partition's slice.
    struct Push {
        enum Kind {
            case state(channel: Int, seq: Int)
            case token(slice: Int, token: Int)
        }
        let kind: Kind
        let partition: Int
        let fence: Fence
    }

    /// A slice running here from a save.
    struct SliceRun {
        let slice: Int
        let fence: Fence
        /// Tokens handed to the push queue, and those that reached APNs (in order: the queue is).
        var sent: Int
        var delivered: Int
        /// The position of the save it ran from or made last, and that save's sequence.
        var saved: Int
        var revision: UInt64
        /// The number of the save out, if one is.
        var saving: Int?
    }

    /// A provider's feed of one channel: one event at a time, sent again until acknowledged.
    struct Client {
        let channel: Int
        let partition: Int
        var seq = 0
        /// Each send's number: a late answer to an earlier one is ignored.
        var attempt = 0
        /// The match ends: the event acknowledged at or after this virtual time is the channel's last.
        var endsAt: Int64
        /// The event in hand is the channel's last.
        var isLast = false
        var finished = false
    }
}
