/// Which queued writes of a ``JetStreamChannelStore`` may go to the cluster now: one write in
/// flight per log (a partition's writes are compare-and-set on its log's last sequence, so they
/// go one after another, in submission order), as many logs at once as have writes waiting.
/// A write marked exclusive (it checks or changes something all partitions share: an APNs
/// channel id is unique across channels) goes alone, once everything before it has completed,
/// and holds back everything after it. A value type with no I/O: the store asks it what to
/// start and tells it what finished.
public struct PartitionWriteQueue<Work> {
    public struct Write {
        public var log: ChannelLogLayout.Log
        public var exclusive: Bool
        public var work: Work

        public init(log: ChannelLogLayout.Log, exclusive: Bool = false, work: Work) {
            self.log = log
            self.exclusive = exclusive
            self.work = work
        }
    }

    private var waiting: [Write] = []
    private var busy: Set<ChannelLogLayout.Log> = []
    private var exclusiveInFlight = false

    public init() {}

    /// Nothing waiting and nothing in flight.
    public var isIdle: Bool { waiting.isEmpty && busy.isEmpty }
    /// Writes in flight now.
    public var inFlight: Int { busy.count }

    public mutating func append(_ write: Write) { waiting.append(write) }

    /// Takes the writes that may start now, in submission order, and counts them as in flight
    /// until ``finished(_:)``.
    public mutating func takeStartable() -> [Write] {
        var started: [Write] = []
        var blocked: Set<ChannelLogLayout.Log> = []
        var index = 0
        while index < waiting.count, !exclusiveInFlight {
            let write = waiting[index]
            if write.exclusive {
                // Alone, and after everything submitted before it.
                guard busy.isEmpty, index == 0 else { break }
                exclusiveInFlight = true
            } else if busy.contains(write.log) || blocked.contains(write.log) {
                blocked.insert(write.log)
                index += 1
                continue
            }
            waiting.remove(at: index)
            busy.insert(write.log)
            started.append(write)
        }
        return started
    }

    /// A write taken by ``takeStartable()`` completed; its log takes the next.
    public mutating func finished(_ write: Write) { finished(log: write.log, exclusive: write.exclusive) }

    /// ``finished(_:)`` by the write's log and kind (what a completion can carry across threads).
    public mutating func finished(log: ChannelLogLayout.Log, exclusive: Bool) {
        busy.remove(log)
        if exclusive { exclusiveInFlight = false }
    }
}
