/// Events by virtual time, in insertion order among equal times: a binary heap of times over
/// slots holding the events (so that reordering moves no event). Inlinable: the simulations in
/// other modules get it specialized for their events.
public struct EventQueue<Event> {
    @usableFromInline var heap: [(time: Int64, order: UInt64, slot: Int)] = []
    @usableFromInline var slots: [Event?] = []
    @usableFromInline var freeSlots: [Int] = []
    @usableFromInline var pushed: UInt64 = 0

    @inlinable public init() {}

    @inlinable public var nextTime: Int64? { heap.first?.time }

    @inlinable public mutating func push(_ event: Event, at time: Int64) {
        pushed += 1
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = event
        } else {
            slot = slots.count
            slots.append(event)
        }
        heap.append((time, pushed, slot))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    @inlinable public mutating func pop() -> (Int64, Event)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < heap.count && precedes(left, first) { first = left }
            if right < heap.count && precedes(right, first) { first = right }
            guard first != parent else { break }
            heap.swapAt(parent, first)
            parent = first
        }
        guard let event = slots[top.slot] else { return nil }
        slots[top.slot] = nil
        freeSlots.append(top.slot)
        return (top.time, event)
    }

    @inlinable func precedes(_ a: Int, _ b: Int) -> Bool {
        heap[a].time != heap[b].time ? heap[a].time < heap[b].time : heap[a].order < heap[b].order
    }
}
