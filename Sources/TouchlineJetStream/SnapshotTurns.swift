import TouchlineRuntime

/// Turns at logging a snapshot among the registry partitions of one gateway: one partition at a
/// time, the others in the order they asked.
///
/// A registry partition's snapshot is its file's whole image, logged in parts of up to a
/// megabyte over the gateway's one NATS connection, which its lease keeper's renewals share.
/// With every partition that came due logging its image at once, a gateway filling its registry
/// had megabytes queued ahead of each renewal: at 1.7 million tokens through one gateway it lost
/// leases until a list failed fifty times (docs/benchmarks.md). One at a time also bounds the
/// memory images take while they are logged to one image.
///
/// Confined to `loop`, the partitions' loop: a turn is given on it, never inside ``done()``.
public final class SnapshotTurns: @unchecked Sendable {
    private let loop: EventLoop
    private var taken = false
    private var waiting: [@Sendable () -> Void] = []

    public init(loop: EventLoop) { self.loop = loop }

    /// Runs `turn` once no other partition holds one (on the loop); the holder calls ``done()``.
    public func take(_ turn: @escaping @Sendable () -> Void) {
        if taken { return waiting.append(turn) }
        taken = true
        turn()
    }

    /// The holder's turn is over: the next waiting one runs, on a later pass of the loop.
    public func done() {
        guard !waiting.isEmpty else {
            taken = false
            return
        }
        loop.execute(waiting.removeFirst())
    }

    /// Partitions waiting for a turn (tests).
    var waitingCount: Int { waiting.count }
}
