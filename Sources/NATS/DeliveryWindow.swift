import Dispatch
import Synchronization

/// How many messages of a subscription may be handed to its loop before the handler has
/// finished with them (``release()``). When the window is full the client's delivery thread
/// waits, so the messages stay with the client and, once its flow control stops answering, with
/// the server, instead of piling up in the loop's queue: reading a log of a gigabyte then takes
/// a window's worth of memory.
///
/// One waiter at a time: the subscription's delivery thread.
public final class DeliveryWindow: Sendable {
    private struct State {
        var free: Int
        var closed = false
        var waiting = false
        /// A deliverer that does not wait (``take(orWhenFree:)``), to call once a place is free.
        var waiter: (@Sendable () -> Void)?
    }

    private let state: Mutex<State>
    private let wakeup = DispatchSemaphore(value: 0)

    public init(size: Int) { state = Mutex(State(free: max(1, size))) }

    /// Takes a place for one message, waiting while there is none (the delivery thread).
    func take() {
        while true {
            let taken = state.withLock { state -> Bool in
                if state.closed { return true }
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiting = true
                return false
            }
            if taken { return }
            wakeup.wait()
        }
    }

    /// Takes a place for one message if one is free; if none is, `whenFree` runs (on the thread
    /// that frees one) once one is. For a deliverer that must not wait, as the delivery thread
    /// does: one that delivers under a lock of its own (an in-memory cluster).
    public func take(orWhenFree whenFree: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            if state.closed { return true }
            if state.free > 0 {
                state.free -= 1
                return true
            }
            state.waiter = whenFree
            return false
        }
    }

    /// The handler is done with one message: its place is free again (any thread).
    public func release() { wake { $0.free += 1 } }

    /// Lets every later message through at once: after cancelling the subscription, so its
    /// delivery thread is not left waiting.
    public func close() { wake { $0.closed = true } }

    private func wake(_ change: (inout State) -> Void) {
        let (waiting, waiter) = state.withLock { state in
            change(&state)
            defer {
                state.waiting = false
                state.waiter = nil
            }
            return (state.waiting, state.waiter)
        }
        if waiting { wakeup.signal() }
        waiter?()
    }
}
