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

    /// The handler is done with one message: its place is free again (any thread).
    public func release() { wake { $0.free += 1 } }

    /// Lets every later message through at once: after cancelling the subscription, so its
    /// delivery thread is not left waiting.
    public func close() { wake { $0.closed = true } }

    private func wake(_ change: (inout State) -> Void) {
        let waiting = state.withLock { state -> Bool in
            change(&state)
            defer { state.waiting = false }
            return state.waiting
        }
        if waiting { wakeup.signal() }
    }
}
