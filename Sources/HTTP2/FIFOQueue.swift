/// A first-in first-out queue on a growable ring buffer.
///
/// Requests wait here while a connection has no free stream (or a pool has no ready connection).
/// Appending and popping are O(1) and reuse the storage, so a busy queue allocates only while it
/// grows to its high-water size.
struct FIFOQueue<Element> {
    private var storage: ContiguousArray<Element?> = []
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = element
        count += 1
    }

    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head].take()
        head = (head + 1) % storage.count
        count -= 1
        return element
    }

    /// Empties the queue, returning the elements in FIFO order.
    mutating func removeAll() -> [Element] {
        var all: [Element] = []
        all.reserveCapacity(count)
        while let element = popFirst() { all.append(element) }
        head = 0
        return all
    }

    private mutating func grow() {
        var bigger = ContiguousArray<Element?>(repeating: nil, count: Swift.max(16, storage.count * 2))
        for i in 0..<count { bigger[i] = storage[(head + i) % storage.count].take() }
        storage = bigger
        head = 0
    }
}
