import TouchlineRuntime

/// The ingest, broadcast and personal loops every other part runs on. Stopped once the stores
/// have committed what the loops queued (their completions still land), and before the
/// cluster's connection closes (its keeper ran on the ingest loop).
package struct GatewayLoops: GatewayService {
    package let ingest: EventLoop
    package let broadcast: EventLoop
    package let personal: EventLoop

    /// The time slice the broadcast path's threads ask for: far below the default (1.4 ms on two
    /// CPUs), so that a goal's commit and push are not held behind the personal queue's work.
    package static let broadcastPathSlice = Duration.microseconds(100)

    private let personalNiceness: Int
    private let log: GatewayLog

    package init(personalNiceness: Int, log: GatewayLog) {
        broadcast = EventLoop.start(name: "touchline-broadcast")
        ingest = EventLoop.start(name: "touchline-ingest")
        personal = EventLoop.start(name: "touchline-personal")
        self.personalNiceness = personalNiceness
        self.log = log
    }

    /// Short time slices, on kernels that honour them: the broadcast path's loops (the ingest
    /// loop also serves the provider API) preempt background work as soon as they wake, and
    /// the personal loop, once preempted, holds a CPU for at most a short slice at a time; it
    /// runs at a lower priority when `personalQueue.niceness` asks.
    package func start() {
        for loop in [broadcast, ingest, personal] where (try? loop.requestShortSlices(Self.broadcastPathSlice)) != true {
            log.warning("the kernel refused short time slices for \(loop.name); a goal may wait behind background work for a time slice")
        }
        if personalNiceness > 0, (try? personal.lowerThreadPriority(niceness: Int32(personalNiceness))) != true {
            log.warning("the personal loop's thread priority could not be lowered; it runs at the same priority as the others")
        }
    }

    package func close() {
        ingest.stopAndWait()
        broadcast.stopAndWait()
        personal.stopAndWait()
    }
}
