/// Targets waiting for their back-off to pass, earliest first (a binary min-heap).
struct RetrySchedule: Sendable {
    private var heap: [(due: UnixTime, target: FanOutJob.TargetID)] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var earliest: UnixTime? { heap.first?.due }

    mutating func insert(_ target: FanOutJob.TargetID, due: UnixTime) {
        heap.append((due, target))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].due < heap[parent].due else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest target if it is due at `now`.
    mutating func popDue(at now: UnixTime) -> FanOutJob.TargetID? {
        guard let first = heap.first, first.due <= now else { return nil }
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].due < heap[smallest].due { smallest = left }
            if right < heap.count, heap[right].due < heap[smallest].due { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return first.target
    }

    /// Empties the schedule, returning its targets in no particular order.
    mutating func removeAll() -> [FanOutJob.TargetID] {
        defer { heap.removeAll() }
        return heap.map(\.target)
    }
}
