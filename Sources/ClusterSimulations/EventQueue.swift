/// Events by virtual time, in insertion order among equal times: a binary heap of times over
/// slots holding the events (so that reordering moves no event).
public struct EventQueue<Event> {
    private var order = EventOrder()
    private var slots: [Event?] = []
    private var freeSlots: [Int] = []

    public init() {}

    public var nextTime: Int64? { order.nextTime }

    public mutating func push(_ event: Event, at time: Int64) {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = event
        } else {
            slot = slots.count
            slots.append(event)
        }
        order.push(time: time, slot: slot)
    }

    public mutating func pop() -> (Int64, Event)? {
        guard let (time, slot) = order.pop(), let event = slots[slot] else { return nil }
        slots[slot] = nil
        freeSlots.append(slot)
        return (time, event)
    }
}

/// The heap under ``EventQueue``, apart from the events' type: the simulations' hottest code
/// stays free of generic metadata lookups in unoptimized builds.
struct EventOrder {
    private struct Entry {
        let time: Int64
        let order: UInt64
        let slot: Int

        func precedes(_ other: Entry) -> Bool { time != other.time ? time < other.time : order < other.order }
    }

    private var heap: [Entry] = []
    private var pushed: UInt64 = 0

    var nextTime: Int64? { heap.first?.time }

    mutating func push(time: Int64, slot: Int) {
        pushed += 1
        heap.append(Entry(time: time, order: pushed, slot: slot))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (time: Int64, slot: Int)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < heap.count && heap[left].precedes(heap[first]) { first = left }
            if right < heap.count && heap[right].precedes(heap[first]) { first = right }
            guard first != parent else { break }
            heap.swapAt(parent, first)
            parent = first
        }
        return (top.time, top.slot)
    }
}
