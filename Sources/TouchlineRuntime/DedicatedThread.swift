import Foundation

/// Runs blocking work (joining a loop's thread, closing a store, opening files) on a thread of
/// its own and resumes the awaiting task when it is done, so no blocking wait ever occupies one
/// of Swift's cooperative threads (there are only as many as CPUs; a blocked one stalls
/// unrelated tasks).
public enum DedicatedThread {
    public static func run<T: Sendable>(name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<T, any Error>) in
            start(name: name) { done.resume(with: Result { try body() }) }
        }
    }

    /// Starts `body` on a thread of its own and returns at once: for blocking work a loop hands
    /// off (a long store read), whose result goes back through the loop's `execute`.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread { body() }
        thread.name = name
        thread.start()
    }

    /// ``run(name:_:)`` for work that cannot fail.
    public static func run(name: String, _ body: @escaping @Sendable () -> Void) async {
        _ = try? await run(name: name) { () throws -> Void in body() }
    }
}
