/// A condition that did not hold within its bound (``eventually(_:timeout:_:)``).
public struct TimedOut: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) { self.description = description }
}

/// Waits, suspended (never blocking a thread of the task pool), until `condition` holds,
/// polling it every 20 ms; throws ``TimedOut`` naming `what` once `timeout` has passed, so a bug
/// fails instead of hanging. The default bound is generous: the suite runs its tests in
/// parallel, and a gateway or cluster on a busy 2-core machine can take seconds to answer. A
/// condition to read on an event loop reads it there (`try loop.sync { ... }`); one that throws
/// ends the wait with its error.
public func eventually(_ what: String, timeout: Duration = .seconds(30), _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(description: "timed out after \(timeout) waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
