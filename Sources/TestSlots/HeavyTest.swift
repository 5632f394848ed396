import Foundation
import Synchronization
import Testing

/// The trait of suites whose tests occupy the machine: they start gateways, mock servers, NATS
/// clusters, browsers or other processes, listen on sockets, or wait for disks.
///
/// Swift Testing starts every test of a parallel run at once. On a small machine that is a
/// hundred gateways and several three-node NATS clusters at the same moment, each test then
/// waiting on the others for the CPU, and a test blocking one of Swift's few cooperative threads
/// (a socket read, a `DispatchGroup.wait`) holds up all of them: bounds that a test keeps (a
/// gateway started within 30 s, a cluster healthy within 30 s) were missed in most runs. A heavy
/// test first takes one of a fixed number of slots (``HeavyTestSlots``), waiting without holding
/// a thread; tests without the trait (the pure core, parsers, encoders) run beside them freely.
///
/// Use it on the suite: `@Suite(.heavy) struct ...`. It reaches every test inside, nested suites
/// included; a test case takes its slot for its whole run and gives it back when it ends.
public struct HeavyTest: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Suites themselves only group their tests; only a test case takes a slot.
        guard testCase != nil else { return try await function() }
        await HeavyTestSlots.shared.acquire()
        defer { HeavyTestSlots.shared.release() }
        try await function()
    }
}

extension Trait where Self == HeavyTest {
    /// The test occupies the machine (see ``HeavyTest``).
    public static var heavy: HeavyTest { HeavyTest() }
}

/// The slots heavy tests share across the whole test process (every test module of the run).
///
/// Their number is `TOUCHLINE_TEST_SLOTS` when set (1 runs heavy tests one at a time), else
/// four per CPU and at least four: on two CPUs, eight heavy tests at once ran the suite fastest
/// and never missed a bound, where all at once was slower and failed most runs.
public final class HeavyTestSlots: Sendable {
    public static let shared = HeavyTestSlots(count: HeavyTestSlots.configuredCount())

    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    public init(count: Int) {
        precondition(count > 0, "at least one slot")
        state = Mutex(State(free: count))
    }

    /// Waits (suspended, not blocking a thread) until a slot is free, and takes it. First come,
    /// first served.
    public func acquire() async {
        await withCheckedContinuation { (granted: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.free > 0 else {
                    state.waiting.append(granted)
                    return false
                }
                state.free -= 1
                return true
            }
            if now { granted.resume() }
        }
    }

    /// Gives a slot back: to the longest waiter if there is one.
    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }

    static func configuredCount() -> Int {
        if let text = ProcessInfo.processInfo.environment["TOUCHLINE_TEST_SLOTS"], let count = Int(text), count > 0 {
            return count
        }
        return max(4, 4 * ProcessInfo.processInfo.activeProcessorCount)
    }
}
