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
/// included; a test case takes its slots for its whole run and gives them back when it ends. A
/// test that starts a three-node NATS cluster (three servers, their elections, the gateways on
/// them) takes three (`.heavy(weight: 3)`), so that a run never starts more clusters than the
/// machine brings up within their health checks.
///
/// A test that holds its slots for tens of seconds (a load scenario, a rotation under load) is
/// `long` (`.heavy(long: true)`): it goes before the short tests waiting, so that it starts
/// while they run instead of after them, when it would end the run alone.
public struct HeavyTest: SuiteTrait, TestTrait, TestScoping {
    /// Slots each test case takes.
    public let weight: Int
    /// Whether the test case goes before the short ones waiting for slots.
    public var isLong = false

    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Suites themselves only group their tests; only a test case takes slots.
        guard testCase != nil else { return try await function() }
        let clock = ContinuousClock()
        let asked = clock.now
        try await HeavyTestSlots.shared.withSlots(weight, long: isLong) {
            let granted = clock.now
            defer { SlotReport.shared?.record(test: test, weight: weight, waited: granted - asked, held: clock.now - granted) }
            try await function()
        }
    }
}

/// Where the heavy slots' time goes: with `TOUCHLINE_TEST_SLOT_REPORT` naming a file, each heavy
/// test case appends one line to it, `held-seconds<TAB>waited-seconds<TAB>weight<TAB>test`, when it
/// gives its slots back. A test's own duration in Swift Testing's output includes its wait for a
/// slot, so in a parallel run it says more about the queue than about the test; the time a test
/// holds its slots, times its weight, is what it costs the run.
final class SlotReport: Sendable {
    static let shared = ProcessInfo.processInfo.environment["TOUCHLINE_TEST_SLOT_REPORT"].flatMap(SlotReport.init(path:))

    private let descriptor: Int32

    init?(path: String) {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
    }

    func record(test: Test, weight: Int, waited: Duration, held: Duration) {
        func seconds(_ duration: Duration) -> String { String(format: "%.3f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) }
        let line = Array("\(seconds(held))\t\(seconds(waited))\t\(weight)\t\(test.id)\n".utf8)
        // One write per line, appended: lines from tests ending together never interleave.
        _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}

extension Trait where Self == HeavyTest {
    /// The test occupies the machine (see ``HeavyTest``).
    public static var heavy: HeavyTest { HeavyTest(weight: 1) }

    /// The test occupies as much as `weight` ordinary heavy tests.
    public static func heavy(weight: Int) -> HeavyTest { HeavyTest(weight: weight) }

    /// A heavy test that runs for tens of seconds (`long`): it takes its slots before the short
    /// tests waiting.
    public static func heavy(weight: Int = 1, long: Bool) -> HeavyTest { HeavyTest(weight: weight, isLong: long) }
}

/// The slots heavy tests share across the whole test process (every test module of the run).
///
/// Their number is `TOUCHLINE_TEST_SLOTS` when set (1 runs heavy tests one at a time), else
/// four per CPU and at least four: on two CPUs, eight heavy tests at once ran the suite fastest
/// and never missed a bound, where all at once was slower and failed most runs.
public final class HeavyTestSlots: Sendable {
    public static let shared = HeavyTestSlots(count: HeavyTestSlots.configuredCount())

    private struct State {
        let count: Int
        var free: Int
        var waiting: [(weight: Int, long: Bool, granted: CheckedContinuation<Void, Never>)] = []

        /// Queues a waiter: a long one after the long ones already waiting, before the others.
        mutating func enqueue(weight: Int, long: Bool, _ granted: CheckedContinuation<Void, Never>) {
            let place = long ? (waiting.firstIndex { !$0.long } ?? waiting.endIndex) : waiting.endIndex
            waiting.insert((min(weight, count), long, granted), at: place)
        }

        /// Grants waiters in arrival order while the first one fits (a heavier one is not passed
        /// over for ever by lighter ones behind it).
        mutating func grantable() -> [CheckedContinuation<Void, Never>] {
            var granted: [CheckedContinuation<Void, Never>] = []
            while let first = waiting.first, first.weight <= free {
                free -= first.weight
                granted.append(waiting.removeFirst().granted)
            }
            return granted
        }
    }

    private let state: Mutex<State>

    public init(count: Int) {
        precondition(count > 0, "at least one slot")
        state = Mutex(State(count: count, free: count))
    }

    /// Whether the current task (or one it descends from) holds slots: it never waits for more,
    /// see ``withSlots(_:long:_:)``.
    @TaskLocal static var isHolding = false

    /// Runs `body` holding `weight` slots, taken first unless this task holds slots already.
    ///
    /// A test holding slots that waits for more (a heavy test starting a NATS cluster through a
    /// helper that takes the cluster's slots, or a cluster started inside another) deadlocks the
    /// run as soon as a waiter that needs more slots than are free stands first in the queue:
    /// the holder waits behind it, and it waits for the holder. So slots are taken once per task:
    /// what a test holds covers what it starts inside, and a test that starts more than one
    /// server's worth says so in its trait's weight.
    public func withSlots<T>(_ weight: Int = 1, long: Bool = false, _ body: () async throws -> T) async rethrows -> T {
        if Self.isHolding { return try await body() }
        await acquire(weight, long: long)
        defer { release(weight) }
        return try await Self.$isHolding.withValue(true) { try await body() }
    }

    /// Waits (suspended, not blocking a thread) until `weight` slots are free, and takes them.
    /// First come, first served, the `long` ones first; a weight above the count takes them all.
    public func acquire(_ weight: Int = 1, long: Bool = false) async {
        await withCheckedContinuation { (granted: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.enqueue(weight: weight, long: long, granted)
                return state.grantable()
            }
            ready.forEach { $0.resume() }
        }
    }

    /// How many tests wait for slots now.
    public var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Gives `weight` slots back, to the waiters in order as far as they fit.
    public func release(_ weight: Int = 1) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.free += min(weight, state.count)
            return state.grantable()
        }
        ready.forEach { $0.resume() }
    }

    static func configuredCount() -> Int {
        if let text = ProcessInfo.processInfo.environment["TOUCHLINE_TEST_SLOTS"], let count = Int(text), count > 0 {
            return count
        }
        return max(4, 4 * ProcessInfo.processInfo.activeProcessorCount)
    }
}
