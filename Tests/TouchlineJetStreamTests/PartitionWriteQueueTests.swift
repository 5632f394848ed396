import Testing
import TouchlineJetStream

struct PartitionWriteQueueTests {
    typealias Queue = PartitionWriteQueue<String>

    static func names(_ writes: [Queue.Write]) -> [String] { writes.map(\.work) }

    @Test func eachLogHasOneWriteInFlightAndKeepsItsOrder() {
        var queue = Queue()
        for (name, partition) in [("a1", 1), ("a2", 1), ("b1", 2), ("a3", 1), ("b2", 2)] {
            queue.append(.init(log: .partition(partition), work: name))
        }
        let first = queue.takeStartable()
        #expect(Self.names(first) == ["a1", "b1"])
        #expect(queue.takeStartable().isEmpty, "both logs are busy")
        queue.finished(first[1])
        let next = queue.takeStartable()
        #expect(Self.names(next) == ["b2"], "b's next, while a1 is still in flight")
        queue.finished(first[0])
        #expect(Self.names(queue.takeStartable()) == ["a2"], "a's writes in submission order")
        #expect(!queue.isIdle)
    }

    @Test func anExclusiveWriteWaitsForEverythingBeforeItAndHoldsBackEverythingAfter() {
        var queue = Queue()
        queue.append(.init(log: .partition(1), work: "a1"))
        queue.append(.init(log: .partition(2), work: "b1"))
        queue.append(.init(log: .partition(3), exclusive: true, work: "created"))
        queue.append(.init(log: .partition(4), work: "d1"))
        let first = queue.takeStartable()
        #expect(Self.names(first) == ["a1", "b1"])
        queue.finished(first[0])
        #expect(queue.takeStartable().isEmpty, "b1 still in flight")
        queue.finished(first[1])
        let exclusive = queue.takeStartable()
        #expect(Self.names(exclusive) == ["created"], "alone")
        #expect(queue.inFlight == 1)
        queue.finished(exclusive[0])
        #expect(Self.names(queue.takeStartable()) == ["d1"])
    }

    @Test func theQueueIsIdleOnceEveryWriteFinished() {
        var queue = Queue()
        queue.append(.init(log: .global, work: "g"))
        let started = queue.takeStartable()
        #expect(!queue.isIdle)
        started.forEach { queue.finished($0) }
        #expect(queue.isIdle)
    }
}
