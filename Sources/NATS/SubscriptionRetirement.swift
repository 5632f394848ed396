import CNATS
import Glibc
import Synchronization
import TouchlineRuntime

/// A connection's subscriptions that were unsubscribed and wait to be destroyed until the
/// client's read loop cannot be using them any more.
///
/// The NATS C client 3.4 (Debian 12's) looks an arriving message's subscription up and goes on
/// using it without holding a reference (later clients take one): a subscription destroyed on
/// another thread in that moment is freed under the read loop, which then corrupts the heap
/// (`NATSSubscriptionTests` reproduces it). Unsubscribing takes a subscription out of that
/// lookup, and the read loop handles what it reads in order, so once it has read the server's
/// answer to a PING sent after the unsubscribe (a flush), it is past any message it had taken
/// for the subscription.
///
/// Each batch of retired subscriptions is destroyed after such a flush, on a thread of its own
/// (a flush waits for the network) that ends when nothing is left; while the connection is
/// reconnecting the flush is tried again every second. A closed connection's subscriptions
/// wait for the connection's own destruction, which joins its read loop first.
final class SubscriptionRetirement: Sendable {
    /// An unsubscribed subscription: only this type destroys it.
    private struct Retired: @unchecked Sendable {
        let handle: OpaquePointer
    }

    private struct State {
        var waiting: [Retired] = []
        /// The batch whose flush is under way.
        var flushing: [Retired] = []
        var draining = false
    }

    private let state = Mutex(State())
    private static let flushTimeoutMilliseconds: Int64 = 2_000

    /// Subscriptions unsubscribed and not destroyed yet.
    var count: Int { state.withLock { $0.waiting.count + $0.flushing.count } }

    /// Takes `handle`, already unsubscribed, to destroy after `connection`'s next round trip.
    func retire(_ handle: OpaquePointer, of connection: NATSConnection) {
        let starts = state.withLock { state in
            state.waiting.append(Retired(handle: handle))
            defer { state.draining = true }
            return !state.draining
        }
        if starts { DedicatedThread.start(name: "nats-retirement") { self.drain(connection) } }
    }

    /// Destroys every subscription still waiting: called once the connection is destroyed.
    func destroyAll() {
        let all = state.withLock { state in
            defer { state.waiting = [] }
            return state.waiting
        }
        for retired in all { natsSubscription_Destroy(retired.handle) }
    }

    /// Destroys batch after batch, each after a flush begun once it was taken, until none is
    /// left or the connection is closed.
    private func drain(_ connection: NATSConnection) {
        while let batch = nextBatch(connection) {
            guard flushThroughTheReadLoop(connection) else {
                return state.withLock { state in
                    state.waiting = state.flushing + state.waiting
                    state.flushing = []
                    state.draining = false
                }
            }
            for retired in batch { natsSubscription_Destroy(retired.handle) }
            state.withLock { $0.flushing = [] }
        }
    }

    private func nextBatch(_ connection: NATSConnection) -> [Retired]? {
        state.withLock { state in
            guard !state.waiting.isEmpty, !connection.isClosed else {
                state.draining = false
                return nil
            }
            state.flushing = state.waiting
            state.waiting = []
            return state.flushing
        }
    }

    /// True once a flush has come back; false when the connection closed first.
    private func flushThroughTheReadLoop(_ connection: NATSConnection) -> Bool {
        while natsConnection_FlushTimeout(connection.handle, Self.flushTimeoutMilliseconds) != NATS_OK {
            if connection.isClosed { return false }
            usleep(1_000_000)
        }
        return true
    }
}
