import TouchlineCore

/// A cluster in virtual time: instances running ``PartitionLeases`` around one simulated
/// key-value bucket, played the way a shell and a network would play them.
///
/// The bucket applies writes with compare-and-set and gives every stored write the next
/// revision; its watch reports each stored write to every connected instance, in order, after
/// a seeded random delay (a new subscriber first gets every key, then `caughtUp`). Requests,
/// answers and watch reports each take a random delay and may be dropped; an instance notices a
/// lost report at the next one and watches anew, as the keeper does on a gap in the stream's
/// sequences. An instance can be killed (it stops sending and receiving; requests already on
/// the way still arrive), isolated from the bucket (its writes fail or go unanswered, its watch
/// is silent; healing resubscribes it), paused (what reaches it waits), restarted under the same
/// name, or shut down. Each instance reads its own clock, which starts anywhere and runs at its
/// own rate. ``step()``, ``advance(to:)`` and the changes it records let a simulation of what
/// the instances do with their partitions run beside it (`ClusterSimulation`).
///
/// After every event it checks the invariants: no partition has two instances whose fence is
/// set at the same virtual instant, fences of a partition only grow from grant to grant, an
/// instance starts only what it does not own and stops only what it owns, a fence is only set
/// on an owned partition, and no instance asks for ticks without letting time pass.
public struct LeaseSimulation {
    public typealias Instant = ContinuousClock.Instant

    public struct Faults {
        /// The delay of each request, answer and watch report (uniform).
        public var delay: ClosedRange<Duration> = .milliseconds(1) ... .milliseconds(20)
        /// The chance that any one request, answer or watch report is lost.
        public var dropRate = 0.0
        /// Clock rates are drawn from 1 ± this.
        public var maximumDrift = 0.0
        /// Timers fire up to this late.
        public var tickLateness = Duration.milliseconds(5)

        public init(delay: ClosedRange<Duration> = .milliseconds(1) ... .milliseconds(20), dropRate: Double = 0,
                    maximumDrift: Double = 0, tickLateness: Duration = .milliseconds(5)) {
            self.delay = delay
            self.dropRate = dropRate
            self.maximumDrift = maximumDrift
            self.tickLateness = tickLateness
        }
    }

    /// A partition an instance started or stopped owning, as its machine said (for a simulation
    /// of what the instances do with their partitions: ``takeOwnershipChanges()``).
    public struct OwnershipChange: Sendable {
        public let instance: Int
        public let partition: Int
        /// The fence it started owning under; nil: it stopped.
        public let fence: Fence?
    }

    public enum Connection: Equatable {
        case up
        /// Cut off from the bucket, still running (and still able to push, were it not for its fence).
        case isolated
        /// Dead: neither sends nor receives.
        case killed
    }

    /// A class: the checks after every event read every instance, and copying one each time
    /// (with its whole state machine) would dominate a run.
    public final class Instance {
        public let id: InstanceID
        public var leases: PartitionLeases
        public var connection = Connection.up
        public let clockStart: Int64
        public let clockRate: Double
        /// A restart's number: answers and watch reports for an earlier run are lost with it.
        public var run = 0
        /// Partitions between `startOwning` and `stopOwning`, per partition.
        public var owns: [Bool]
        public var tickAt: Int64?
        /// Watch reports leave in order: the next can arrive no earlier than this.
        public var watchFreeAt: Int64 = 0
        public var shutdownCompletedAt: Int64?
        public var ticksWithoutTimePassing = 0
        public var lastTickAt: Int64 = -1
        /// A stopped process (SIGSTOP): until this virtual time it handles nothing (what reaches
        /// it waits, in order), while its clock runs on.
        public var pausedUntil: Int64?
        /// A watch report to it was lost: the next one shows the gap.
        public var missedReport = false

        public init(id: InstanceID, leases: PartitionLeases, clockStart: Int64, clockRate: Double, partitionCount: Int) {
            self.id = id
            self.leases = leases
            self.clockStart = clockStart
            self.clockRate = clockRate
            owns = Array(repeating: false, count: partitionCount)
        }

        /// What its clock reads at virtual time `time`.
        public func localNow(at time: Int64) -> ContinuousClock.Instant {
            Self.localNow(at: time, clockStart: clockStart, clockRate: clockRate)
        }

        /// What a clock that read `clockStart` when the simulation began, running at
        /// `clockRate`, reads at virtual time `time`.
        public static func localNow(at time: Int64, clockStart: Int64, clockRate: Double) -> ContinuousClock.Instant {
            LeaseSimulation.origin + .nanoseconds(clockStart + Int64((Double(time) * clockRate).rounded(.down)))
        }
    }

    private enum Event {
        case request(instance: Int, run: Int, BucketWrite)
        case answer(instance: Int, run: Int, BucketWrite, WriteOutcome)
        case report(instance: Int, run: Int, PartitionLeases.Input)
        case tick(instance: Int, run: Int)
    }

    public static let origin = ContinuousClock.now

    public let settings: LeaseSettings
    public var faults: Faults
    /// Virtual nanoseconds since the simulation began.
    public private(set) var time: Int64 = 0
    public private(set) var instances: [Instance] = []
    public private(set) var bucket: [LeaseKey: (revision: Revision, value: PartitionLeases.ObservedValue)] = [:]
    private var lastRevision: UInt64 = 0
    private var random: SplitMix64
    private var events = EventQueue<Event>()
    /// Instances (not killed) between `startOwning` and `stopOwning` of each partition.
    private var owners: [[Int]]
    private var highestFence: [Fence?]
    private var lastOwner: [InstanceID?]
    /// Partitions with more than one entry in `owners` (only those need their fences compared).
    private var contested = 0
    /// Ownership changes from one instance to another.
    public private(set) var moves = 0
    /// Broken invariants, in order (the run goes on).
    public private(set) var failures: [String] = []
    /// Ownership changes not yet taken, oldest first (kept only while ``recordsOwnership``).
    private var ownershipChanges: [OwnershipChange] = []
    /// Instances fed since the last ``takeFedInstances()`` (kept only while ``recordsOwnership``).
    private var fed: [Int] = []
    /// Keeps every start and stop of ownership for ``takeOwnershipChanges()``, and the instances
    /// fed for ``takeFedInstances()``.
    public var recordsOwnership = false
    /// Also checks, after every event, that every set fence belongs to an owned partition (costs
    /// instances × partitions per event).
    public var checksEveryFence = false

    public init(settings: LeaseSettings, faults: Faults = Faults(), seed: UInt64) {
        self.settings = settings
        self.faults = faults
        random = SplitMix64(seed: seed)
        owners = Array(repeating: [], count: settings.partitionCount)
        highestFence = Array(repeating: nil, count: settings.partitionCount)
        lastOwner = Array(repeating: nil, count: settings.partitionCount)
    }

    public var seconds: Double { Double(time) / 1e9 }

    // MARK: Scenario

    /// Starts a new instance now, its clock at `clockRate` (default: drawn within the drift), on
    /// its own lease timing `timing` (default: the simulation's; the partition count must be the
    /// simulation's); returns its index.
    @discardableResult
    public mutating func start(_ name: String, clockRate: Double? = nil, timing: LeaseSettings? = nil) -> Int {
        guard let id = InstanceID(name) else { fatalError("bad instance name \(name)") }
        let settings = timing ?? settings
        precondition(settings.partitionCount == self.settings.partitionCount, "an instance's partition count is the cluster's")
        let rate = clockRate ?? 1 + (random.unit() * 2 - 1) * faults.maximumDrift
        let clockStart = Int64(random.next() % 1_000_000) * 1_000_000
        let index = instances.count
        let leases = PartitionLeases(instance: id, incarnation: random.next(), settings: settings,
                                     now: Self.origin + .nanoseconds(clockStart + Int64((Double(time) * rate).rounded(.down))))
        instances.append(Instance(id: id, leases: leases, clockStart: clockStart, clockRate: rate, partitionCount: settings.partitionCount))
        subscribe(index)
        return index
    }

    /// Starts `count` instances named `i0`, `i1`...
    public mutating func start(count: Int) {
        for number in 0..<count { start("i\(number)") }
    }

    public mutating func kill(_ index: Int) {
        instances[index].connection = .killed
        instances[index].tickAt = nil
        for partition in owners.indices { removeOwner(index, of: partition) }
    }

    private mutating func removeOwner(_ index: Int, of partition: Int) {
        let wasContested = owners[partition].count > 1
        owners[partition].removeAll { $0 == index }
        if wasContested && owners[partition].count < 2 { contested -= 1 }
    }

    public mutating func isolate(_ index: Int) {
        guard instances[index].connection == .up else { return }
        instances[index].connection = .isolated
    }

    /// Reconnects an isolated instance: its watch starts again with every key.
    public mutating func heal(_ index: Int) {
        guard instances[index].connection == .isolated else { return }
        instances[index].connection = .up
        subscribe(index)
    }

    /// The watch starts again with every key (as a watch that lost messages recovers).
    public mutating func resubscribe(_ index: Int) {
        guard instances[index].connection == .up else { return }
        subscribe(index)
    }

    /// The process starts again under the same name (after a kill, or in place).
    public mutating func restart(_ index: Int) {
        if instances[index].connection != .killed { kill(index) }
        instances[index].run += 1
        instances[index].connection = .up
        instances[index].owns = Array(repeating: false, count: settings.partitionCount)
        instances[index].shutdownCompletedAt = nil
        instances[index].pausedUntil = nil
        instances[index].leases = PartitionLeases(instance: instances[index].id, incarnation: random.next(), settings: instances[index].leases.settings,
                                                  now: localNow(index))
        subscribe(index)
    }

    public mutating func shutdown(_ index: Int) {
        feed(index, .shutdown)
    }

    /// Stops the process for `duration` (SIGSTOP, then SIGCONT): answers, watch reports and
    /// ticks that reach it meanwhile wait and are handled in order when it resumes; what it sent
    /// before goes on its way; its clock runs on (the monotonic clock counts a stopped process's
    /// time).
    public mutating func pause(_ index: Int, for duration: Duration) {
        guard instances[index].connection != .killed else { return }
        let until = time + duration.inNanoseconds
        instances[index].pausedUntil = max(instances[index].pausedUntil ?? 0, until)
    }

    /// Whether the instance is stopped at this virtual time.
    public func isPaused(_ index: Int) -> Bool { instances[index].pausedUntil.map { time < $0 } ?? false }

    /// A new watch: every key as it is now, then `caughtUp`, then every later write.
    private mutating func subscribe(_ index: Int) {
        instances[index].missedReport = false
        let at = max(instances[index].watchFreeAt, time + delay())
        let run = instances[index].run
        for (key, entry) in bucket.sorted(by: { $0.key.name < $1.key.name }) {
            events.push(.report(instance: index, run: run, .observed(key, revision: entry.revision, value: entry.value)), at: at)
        }
        events.push(.report(instance: index, run: run, .caughtUp), at: at)
        instances[index].watchFreeAt = at
    }

    // MARK: Running

    /// The virtual time of the next event, if any: a simulation built on this one runs its own
    /// events and these in time order (``step()``, ``advance(to:)``).
    public var nextEventTime: Int64? { events.nextTime }

    /// Lets virtual time pass to `instant` (never back); the caller has run every event before it.
    public mutating func advance(to instant: Int64) { time = max(time, instant) }

    /// The instances whose machines took an input since the last call (a keeper tells its
    /// fences what its machine holds after each input), oldest first.
    public mutating func takeFedInstances() -> [Int] {
        defer { fed.removeAll(keepingCapacity: true) }
        return fed
    }

    /// The ownership changes since the last call, oldest first.
    public mutating func takeOwnershipChanges() -> [OwnershipChange] {
        defer { ownershipChanges.removeAll() }
        return ownershipChanges
    }

    /// Runs the events of the next `duration` of virtual time.
    public mutating func run(for duration: Duration) {
        let end = time + duration.inNanoseconds
        while let next = events.nextTime, next <= end { step() }
        time = end
    }

    /// Runs until `condition` holds (checked every 10 ms of virtual time) or `limit` passed;
    /// returns the virtual time it took, nil if it never held.
    public mutating func run(until condition: (LeaseSimulation) -> Bool, within limit: Duration) -> Duration? {
        let begin = time
        let end = time + limit.inNanoseconds
        while time <= end {
            if condition(self) { return .nanoseconds(time - begin) }
            run(for: .milliseconds(10))
        }
        return nil
    }

    /// Runs the next event.
    public mutating func step() {
        guard let (at, event) = events.pop() else { return }
        time = at
        if let resumes = pausedUntil(of: event), resumes > at {
            // Handled once the process resumes, after what reached it before.
            if case .tick(let index, _) = event, instances[index].tickAt == at { instances[index].tickAt = resumes }
            events.push(event, at: resumes)
            return
        }
        switch event {
        case .request(let index, let run, let write):
            arrive(write, from: index, run: run)
        case .answer(let index, let run, let write, let outcome):
            if isReachable(index, run: run) { feed(index, .completed(write, outcome)) }
        case .report(let index, let run, let input):
            guard isReachable(index, run: run) else { break }
            if instances[index].missedReport {
                // The report's sequence shows the gap: the keeper watches anew from each key's
                // last value (the reports of the old watch still on their way change nothing).
                subscribe(index)
            } else {
                feed(index, input)
            }
        case .tick(let index, let run):
            guard instances[index].run == run, instances[index].connection != .killed, instances[index].tickAt == at else { return }
            instances[index].tickAt = nil
            if instances[index].lastTickAt == at {
                instances[index].ticksWithoutTimePassing += 1
                if instances[index].ticksWithoutTimePassing == 100 { fail("\(instances[index].id) asks for ticks without letting time pass") }
                if instances[index].ticksWithoutTimePassing >= 100 { return }
            } else {
                instances[index].ticksWithoutTimePassing = 0
            }
            instances[index].lastTickAt = at
            feed(index, .tick)
        }
        checkInvariants()
    }

    /// When the instance an answer, report or tick is for resumes, if it is stopped (a request
    /// is already on the network).
    private func pausedUntil(of event: Event) -> Int64? {
        switch event {
        case .request: nil
        case .answer(let index, _, _, _), .report(let index, _, _), .tick(let index, _): instances[index].pausedUntil
        }
    }

    private func isReachable(_ index: Int, run: Int) -> Bool {
        instances[index].run == run && instances[index].connection == .up
    }

    /// A request reaches the bucket (also one sent before its instance died).
    private mutating func arrive(_ write: BucketWrite, from index: Int, run: Int) {
        let outcome = apply(write)
        if case .stored(let revision) = outcome, let entry = bucket[write.key] {
            for receiver in instances.indices where instances[receiver].connection == .up {
                if drops() {
                    instances[receiver].missedReport = true
                    continue
                }
                let at = max(instances[receiver].watchFreeAt, time + delay())
                instances[receiver].watchFreeAt = at
                events.push(.report(instance: receiver, run: instances[receiver].run,
                                    .observed(write.key, revision: revision, value: entry.value)), at: at)
            }
        }
        if isReachable(index, run: run) && !drops() {
            events.push(.answer(instance: index, run: run, write, outcome), at: time + delay())
        }
    }

    private mutating func apply(_ write: BucketWrite) -> WriteOutcome {
        let current = bucket[write.key]
        let exists = current.map { $0.value != .deleted } ?? false
        let value: PartitionLeases.ObservedValue
        switch write.change {
        case .create(let record):
            guard !exists else { return .conflict }
            value = .record(record)
        case .update(let record, let expected):
            guard exists, current?.revision == expected else { return .conflict }
            value = .record(record)
        case .delete(let expected):
            guard exists, current?.revision == expected else { return .conflict }
            value = .deleted
        }
        lastRevision += 1
        bucket[write.key] = (Revision(lastRevision), value)
        return .stored(Revision(lastRevision))
    }

    private mutating func feed(_ index: Int, _ input: PartitionLeases.Input) {
        let actions = instances[index].leases.handle(input, now: localNow(index))
        if recordsOwnership { fed.append(index) }
        for action in actions { perform(action, by: index) }
        scheduleTick(index)
    }

    private mutating func perform(_ action: PartitionLeases.Action, by index: Int) {
        let id = instances[index].id
        switch action {
        case .write(let write):
            switch instances[index].connection {
            case .up:
                if !drops() { events.push(.request(instance: index, run: instances[index].run, write), at: time + delay()) }
            case .isolated:
                // A refused connection answers at once; a silent one lets the write time out.
                if random.unit() < 0.5 {
                    events.push(.answer(instance: index, run: instances[index].run, write, .failed), at: time + delay())
                }
            case .killed:
                fail("\(id) wrote while dead")
            }
        case .startOwning(let partition, let fence):
            if instances[index].owns[partition] { fail("\(id) started partition \(partition) it already owns") }
            if let highest = highestFence[partition], fence <= highest {
                fail("\(id) got partition \(partition) with \(fence), not above \(highest)")
            }
            highestFence[partition] = fence
            if let previous = lastOwner[partition], previous != id { moves += 1 }
            lastOwner[partition] = id
            instances[index].owns[partition] = true
            owners[partition].append(index)
            if owners[partition].count == 2 { contested += 1 }
            if recordsOwnership { ownershipChanges.append(OwnershipChange(instance: index, partition: partition, fence: fence)) }
        case .stopOwning(let partition):
            if !instances[index].owns[partition] { fail("\(id) stopped partition \(partition) it does not own") }
            instances[index].owns[partition] = false
            removeOwner(index, of: partition)
            if recordsOwnership { ownershipChanges.append(OwnershipChange(instance: index, partition: partition, fence: nil)) }
        case .shutdownComplete:
            instances[index].shutdownCompletedAt = time
        }
    }

    private mutating func scheduleTick(_ index: Int) {
        guard let due = instances[index].leases.nextTick else { return }
        let lateness = Int64(random.unit() * Double(faults.tickLateness.inNanoseconds))
        let at = max(time, virtualTime(of: due, on: index)) + lateness
        if instances[index].tickAt.map({ at < $0 }) ?? true {
            instances[index].tickAt = at
            events.push(.tick(instance: index, run: instances[index].run), at: at)
        }
    }

    // MARK: Clocks

    /// What the instance's clock reads now.
    public func localNow(_ index: Int) -> Instant { instances[index].localNow(at: time) }

    /// The first virtual time at which the instance's clock reads `instant` or later.
    private func virtualTime(of instant: Instant, on index: Int) -> Int64 {
        let local = (instant - Self.origin).inNanoseconds - instances[index].clockStart
        return Int64((Double(local) / instances[index].clockRate).rounded(.up)) + 1
    }

    // MARK: Checks

    private mutating func checkInvariants() {
        for partition in owners.indices where contested > 0 && owners[partition].count > 1 {
            let holders = owners[partition].filter { instances[$0].leases.fence(for: partition, now: localNow($0)) != nil }
            if holders.count > 1 {
                fail("partition \(partition) has fences at \(holders.map { instances[$0].id.name }) at the same instant")
            }
        }
        guard checksEveryFence else { return }
        for instance in instances where instance.connection != .killed {
            let now = instance.localNow(at: time)
            let leases = instance.leases
            for partition in owners.indices where !instance.owns[partition] && leases.fence(for: partition, now: now) != nil {
                fail("\(instance.id) has a fence for partition \(partition) it was never told to own")
            }
        }
    }

    private mutating func fail(_ message: String) {
        if failures.count < 20 { failures.append("t=\(seconds) s: \(message)") }
    }

    // MARK: Looking

    /// Instances connected and running as members.
    public var activeInstances: [Int] {
        instances.indices.filter { instances[$0].connection == .up && instances[$0].leases.phase == .running }
    }

    /// Partitions each instance (not killed) holds a fence for now.
    public func holdings() -> [Int: [Int]] {
        var held: [Int: [Int]] = [:]
        for (index, instance) in instances.enumerated() where instance.connection != .killed {
            let now = instance.localNow(at: time)
            let leases = instance.leases
            held[index] = (0..<settings.partitionCount).filter { leases.fence(for: $0, now: now) != nil }
        }
        return held
    }

    /// Every partition is held by exactly one active instance, none holds more than ⌈P/N⌉ for
    /// N active instances, and the others hold nothing.
    public var isBalanced: Bool {
        let active = activeInstances
        guard !active.isEmpty else { return false }
        let ceiling = (settings.partitionCount + active.count - 1) / active.count
        var holderCount = Array(repeating: 0, count: settings.partitionCount)
        for (index, partitions) in holdings() {
            guard active.contains(index) || partitions.isEmpty, partitions.count <= ceiling else { return false }
            for partition in partitions { holderCount[partition] += 1 }
        }
        return holderCount.allSatisfy { $0 == 1 }
    }

    /// The owners of partitions (by instance name), for messages.
    public var summary: String {
        holdings().sorted { $0.key < $1.key }.map { "\(instances[$0.key].id)=\($0.value.count)" }.joined(separator: " ")
    }

    // MARK: Randomness

    private mutating func delay() -> Int64 {
        let low = faults.delay.lowerBound.inNanoseconds
        let high = faults.delay.upperBound.inNanoseconds
        return low + Int64(random.unit() * Double(high - low))
    }

    private mutating func drops() -> Bool {
        faults.dropRate > 0 && random.unit() < faults.dropRate
    }

    public mutating func chance(_ probability: Double) -> Bool { random.unit() < probability }

    public mutating func pick(_ range: Range<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }
}
