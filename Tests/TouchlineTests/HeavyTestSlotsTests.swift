import Synchronization
import Testing
import TestSlots

/// The order in which heavy tests get their slots: first come, first served, a long test before
/// the short ones waiting, and a heavier one never passed over by lighter ones behind it.
@Suite struct HeavyTestSlotsTests {
    /// Starts a task per name that takes its slots and records its name, each queued before the
    /// next starts; returns the names in the order the slots were granted, as they come.
    final class Queue: Sendable {
        let slots: HeavyTestSlots
        private let granted = Mutex<[String]>([])
        var order: [String] { granted.withLock { $0 } }

        init(slots: HeavyTestSlots) { self.slots = slots }

        func enqueue(_ name: String, weight: Int = 1, long: Bool = false) async throws {
            let waiting = slots.waitingCount
            Task {
                await slots.acquire(weight, long: long)
                granted.withLock { $0.append(name) }
            }
            try await eventually("\(name) queued") { slots.waitingCount == waiting + 1 }
        }
    }

    /// A task holding slots that asks for more inside (a heavy test starting a NATS cluster
    /// through a helper that takes the cluster's slots) runs on what it holds: were it to queue
    /// behind a waiter that needs every slot, each would wait for the other for ever.
    @Test(.timeLimit(.minutes(1))) func slotsTakenInsideSlotsAlreadyHeldAreNotWaitedFor() async throws {
        let queue = Queue(slots: HeavyTestSlots(count: 2))
        let ran = try await queue.slots.withSlots(1) {
            try await queue.enqueue("alone", weight: 2)
            return await queue.slots.withSlots(1) { true }
        }
        #expect(ran, "the inner slots were not waited for")
        try await eventually("the one needing every slot granted once they are all free") { queue.order == ["alone"] }
        // Outside any held slots, a task waits its turn as before.
        let waitedTurn = Mutex(false)
        let later = Task { await queue.slots.withSlots(1) { waitedTurn.withLock { $0 = true } } }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!waitedTurn.withLock { $0 }, "not granted while the other holds every slot")
        queue.slots.release(2)
        await later.value
        #expect(waitedTurn.withLock { $0 })
    }

    @Test func aLongTestGoesBeforeTheShortOnesWaitingButAfterTheLongOnes() async throws {
        let queue = Queue(slots: HeavyTestSlots(count: 1))
        await queue.slots.acquire()
        try await queue.enqueue("short 1")
        try await queue.enqueue("long 1", long: true)
        try await queue.enqueue("short 2")
        try await queue.enqueue("long 2", long: true)
        for expected in [["long 1"], ["long 1", "long 2"], ["long 1", "long 2", "short 1"], ["long 1", "long 2", "short 1", "short 2"]] {
            queue.slots.release()
            try await eventually("\(expected.last!) granted") { queue.order.count == expected.count }
            #expect(queue.order == expected)
        }
    }

    @Test func aHeavierTestIsNotPassedOverByLighterOnesBehindIt() async throws {
        let queue = Queue(slots: HeavyTestSlots(count: 3))
        await queue.slots.acquire(2)
        try await queue.enqueue("cluster", weight: 3)
        try await queue.enqueue("gateway")
        // One slot is free, but the gateway waits behind the cluster that needs all three.
        #expect(queue.order.isEmpty)
        queue.slots.release(2)
        try await eventually("the cluster granted") { queue.order == ["cluster"] }
        queue.slots.release(3)
        try await eventually("the gateway granted") { queue.order == ["cluster", "gateway"] }
    }
}
