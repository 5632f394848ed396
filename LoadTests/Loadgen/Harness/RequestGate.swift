import Foundation

/// Lets the soak's load through to the gateway, or holds it: after a kill, the scenario closes
/// the gate, waits until no request is under way, restarts the gateway and checks it, and only
/// then opens the gate again, so that what it checks is not moving.
///
/// It also knows whether the gateway is down and how many times it was killed (the generation),
/// so a request that failed can be told apart: one lost to a kill (it started in an earlier
/// generation, or while the gateway was down) is what a kill does; any other is a real client
/// being hurt. `@unchecked Sendable`: every field is read and written under `condition`.
final class RequestGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = true
    private var inFlight = 0
    private var down = false
    private var kills = 0

    /// Waits while the gate is closed, then counts one request under way; returns the
    /// generation it started in (for ``isKillCasualty(startedIn:)``). Pair with ``leave()``.
    func enter() -> Int {
        condition.lock()
        defer { condition.unlock() }
        while !isOpen { condition.wait() }
        inFlight += 1
        return kills
    }

    func leave() {
        condition.lock()
        inFlight -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Holds every request not yet under way.
    func close() {
        condition.lock()
        isOpen = false
        condition.unlock()
    }

    /// Waits until no request is under way (after ``close()``, until all have ended); false if
    /// some still were after `timeout` seconds.
    func waitUntilIdle(timeout: Double) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while inFlight > 0 {
            if !condition.wait(until: deadline) { return inFlight == 0 }
        }
        return true
    }

    func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }

    /// Called just before the gateway is killed: a new generation starts, and the gateway is down.
    func gatewayGoingDown() {
        condition.lock()
        kills += 1
        down = true
        condition.unlock()
    }

    /// The restarted gateway serves again.
    func gatewayUp() {
        condition.lock()
        down = false
        condition.unlock()
    }

    /// The current generation and whether the gateway is down, read together.
    var state: (generation: Int, down: Bool) {
        condition.lock()
        defer { condition.unlock() }
        return (kills, down)
    }

    /// Whether a request that started in `generation` and failed now failed because of a kill.
    func isKillCasualty(startedIn generation: Int) -> Bool {
        let now = state
        return now.down || now.generation != generation
    }
}
