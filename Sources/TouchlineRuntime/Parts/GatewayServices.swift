import Synchronization

/// The gateway's parts (``GatewayService``) in the order they started: they shut down in the
/// reverse order, one after the other, each gracefully unless cut short; then each is closed,
/// again in the reverse order. A start that fails closes those started before it.
///
/// Thread-safe: parts are started from the starting thread, the shutdown runs in a task, and a
/// cut may come from any thread (``ShutdownRequests``'s escalation).
package final class GatewayServices: Sendable {
    private struct State {
        var started: [any GatewayService] = []
        /// The parts not shut down yet, counted from the first: a cut reaches those only.
        var running = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Starts `service` after those started before it (blocking) and returns it.
    @discardableResult
    package func start<Service: GatewayService>(_ service: Service) throws -> Service {
        try service.start()
        state.withLock { state in
            state.started.append(service)
            state.running = state.started.count
        }
        return service
    }

    /// Shuts every part down in the reverse order of the starts, then closes them all (on a
    /// thread of its own: closing joins threads and commits what is queued).
    package func shutdown(_ grace: ShutdownGrace) async {
        let parts = state.withLock { $0.started }
        for index in parts.indices.reversed() {
            await parts[index].shutdown(grace)
            state.withLock { $0.running = index }
        }
        await DedicatedThread.run(name: "touchline-shutdown") { [self] in closeAll() }
    }

    /// Ends the grace of the part shutting down now and takes it from those still to come.
    package func cutShort() {
        let parts = state.withLock { $0.started.prefix($0.running) }
        for part in parts.reversed() { part.cutShort() }
    }

    /// Closes every part started, in the reverse order (a start that failed; blocking).
    package func closeAll() {
        let parts = state.withLock { state in
            defer { state = State() }
            return state.started
        }
        for part in parts.reversed() { part.close() }
    }
}
