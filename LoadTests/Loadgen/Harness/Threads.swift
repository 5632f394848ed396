import Foundation
import Synchronization

/// Runs `body(index)` for each index on a thread of its own (blocking I/O in parallel) and
/// returns the results in index order, or the first error.
func onThreads<Value: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Value) throws -> [Value] {
    let results = ThreadResults<Value>()
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            let result = Result { try body(index) }
            results.values.withLock { $0[index] = result }
            group.leave()
        }.start()
    }
    group.wait()
    return try results.values.withLock { values in try (0..<count).map { try values[$0]!.get() } }
}

/// Results handed from worker threads to the waiting one.
private final class ThreadResults<Value: Sendable>: Sendable {
    let values: Mutex<[Int: Result<Value, any Error>]> = Mutex([:])
}

/// CLOCK_MONOTONIC in nanoseconds.
func monotonicNanoseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline` (returns at once when it has passed).
func sleep(untilMonotonic deadline: Int64) {
    var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
}

/// A one-way signal for worker threads to finish: set once, read by every thread.
final class StopFlag: Sendable {
    private let flag = Atomic(false)

    func set() { flag.store(true, ordering: .releasing) }
    var isSet: Bool { flag.load(ordering: .acquiring) }
}
