import Dispatch
import Synchronization

/// Runs a store call that answers through a completion and waits for its result on the calling
/// thread: for threads that start or stop things, tools and tests. Never on a loop, nor in a
/// writer's completion (the result would wait for the thread that waits for it).
public func waitForCompletion<T: Sendable>(_ start: (@escaping @Sendable (Result<T, StoreError>) -> Void) -> Void) -> Result<T, StoreError> {
    let done = DispatchSemaphore(value: 0)
    let box = Mutex<Result<T, StoreError>?>(nil)
    start { result in
        box.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return box.withLock { $0! }
}
