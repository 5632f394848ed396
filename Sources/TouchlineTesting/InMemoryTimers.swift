import TouchlineRuntime

/// The in-memory cluster's own clock work (a consumer's acknowledgement wait, a delayed
/// redelivery): one loop of its own, as a server has its own threads. The timers are confined
/// to that loop; callers hand work to it with `execute`.
final class InMemoryTimers: @unchecked Sendable {
    let loop = EventLoop.start(name: "in-memory-nats")
    // Confined to `loop`.
    private var armed: [UInt64: LoopTimer] = [:]
    private var lastID: UInt64 = 0

    /// Runs `body` on the cluster's loop after `delay`.
    func after(_ delay: Duration, _ body: @escaping @Sendable () -> Void) {
        loop.execute { [self] in
            lastID += 1
            let id = lastID
            let timer = LoopTimer(loop: loop) { [self] in
                armed[id] = nil
                body()
            }
            armed[id] = timer
            timer.schedule(after: delay)
        }
    }

    /// Disarms every timer and lets the loop's thread end (without waiting: the last reference
    /// to the cluster may go on any thread, this loop's included).
    func stop() {
        loop.execute { [self] in armed.removeAll() }
        _ = loop.stop()
    }
}
