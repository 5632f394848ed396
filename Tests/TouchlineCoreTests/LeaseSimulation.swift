import TouchlineCore

/// A cluster in virtual time: instances running ``PartitionLeases`` around one simulated
/// key-value bucket, played the way a shell and a network would play them.
///
/// The bucket applies writes with compare-and-set and gives every stored write the next
/// revision; its watch reports each stored write to every connected instance, in order, after
/// a seeded random delay (a new subscriber first gets every key, then `caughtUp`). Requests,
/// answers and watch reports each take a random delay and may be dropped. An instance can be
/// killed (it stops sending and receiving; requests already on the way still arrive), isolated
/// from the bucket (its writes fail or go unanswered, its watch is silent; healing resubscribes
/// it), restarted under the same name, or shut down. Each instance reads its own clock, which
/// starts anywhere and runs at its own rate.
///
/// After every event it checks the invariants: no partition has two instances whose fence is
/// set at the same virtual instant, fences of a partition only grow from grant to grant, an
/// instance starts only what it does not own and stops only what it owns, a fence is only set
/// on an owned partition, and no instance asks for ticks without letting time pass.
struct LeaseSimulation {
    typealias Instant = ContinuousClock.Instant

    struct Faults {
        /// The delay of each request, answer and watch report (uniform).
        var delay: ClosedRange<Duration> = .milliseconds(1) ... .milliseconds(20)
        /// The chance that any one request, answer or watch report is lost.
        var dropRate = 0.0
        /// Clock rates are drawn from 1 ± this.
        var maximumDrift = 0.0
        /// Timers fire up to this late.
        var tickLateness = Duration.milliseconds(5)
    }

    enum Connection: Equatable {
        case up
        /// Cut off from the bucket, still running (and still able to push, were it not for its fence).
        case isolated
        /// Dead: neither sends nor receives.
        case killed
    }

    /// A class: the checks after every event read every instance, and copying one each time
    /// (with its whole state machine) would dominate a run.
    final class Instance {
        let id: InstanceID
        var leases: PartitionLeases
        var connection = Connection.up
        let clockStart: Int64
        let clockRate: Double
        /// A restart's number: answers and watch reports for an earlier run are lost with it.
        var run = 0
        /// Partitions between `startOwning` and `stopOwning`, per partition.
        var owns: [Bool]
        var tickAt: Int64?
        /// Watch reports leave in order: the next can arrive no earlier than this.
        var watchFreeAt: Int64 = 0
        var shutdownCompletedAt: Int64?
        var ticksWithoutTimePassing = 0
        var lastTickAt: Int64 = -1

        init(id: InstanceID, leases: PartitionLeases, clockStart: Int64, clockRate: Double, partitionCount: Int) {
            self.id = id
            self.leases = leases
            self.clockStart = clockStart
            self.clockRate = clockRate
            owns = Array(repeating: false, count: partitionCount)
        }

        /// What its clock reads at virtual time `time`.
        func localNow(at time: Int64) -> ContinuousClock.Instant {
            LeaseSimulation.origin + .nanoseconds(clockStart + Int64((Double(time) * clockRate).rounded(.down)))
        }
    }

    private enum Event {
        case request(instance: Int, run: Int, BucketWrite)
        case answer(instance: Int, run: Int, BucketWrite, WriteOutcome)
        case report(instance: Int, run: Int, PartitionLeases.Input)
        case tick(instance: Int, run: Int)
    }

    static let origin = ContinuousClock.now

    let settings: LeaseSettings
    var faults: Faults
    /// Virtual nanoseconds since the simulation began.
    private(set) var time: Int64 = 0
    private(set) var instances: [Instance] = []
    private(set) var bucket: [LeaseKey: (revision: Revision, value: PartitionLeases.ObservedValue)] = [:]
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
    private(set) var moves = 0
    /// Broken invariants, in order (the run goes on).
    private(set) var failures: [String] = []
    /// Also checks, after every event, that every set fence belongs to an owned partition (costs
    /// instances × partitions per event).
    var checksEveryFence = false

    init(settings: LeaseSettings, faults: Faults = Faults(), seed: UInt64) {
        self.settings = settings
        self.faults = faults
        random = SplitMix64(seed: seed)
        owners = Array(repeating: [], count: settings.partitionCount)
        highestFence = Array(repeating: nil, count: settings.partitionCount)
        lastOwner = Array(repeating: nil, count: settings.partitionCount)
    }

    var seconds: Double { Double(time) / 1e9 }

    // MARK: Scenario

    /// Starts a new instance now, its clock at `clockRate` (default: drawn within the drift);
    /// returns its index.
    @discardableResult
    mutating func start(_ name: String, clockRate: Double? = nil) -> Int {
        guard let id = InstanceID(name) else { fatalError("bad instance name \(name)") }
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
    mutating func start(count: Int) {
        for number in 0..<count { start("i\(number)") }
    }

    mutating func kill(_ index: Int) {
        instances[index].connection = .killed
        instances[index].tickAt = nil
        for partition in owners.indices { removeOwner(index, of: partition) }
    }

    private mutating func removeOwner(_ index: Int, of partition: Int) {
        let wasContested = owners[partition].count > 1
        owners[partition].removeAll { $0 == index }
        if wasContested && owners[partition].count < 2 { contested -= 1 }
    }

    mutating func isolate(_ index: Int) {
        guard instances[index].connection == .up else { return }
        instances[index].connection = .isolated
    }

    /// Reconnects an isolated instance: its watch starts again with every key.
    mutating func heal(_ index: Int) {
        guard instances[index].connection == .isolated else { return }
        instances[index].connection = .up
        subscribe(index)
    }

    /// The watch starts again with every key (as a watch that lost messages recovers).
    mutating func resubscribe(_ index: Int) {
        guard instances[index].connection == .up else { return }
        subscribe(index)
    }

    /// The process starts again under the same name (after a kill, or in place).
    mutating func restart(_ index: Int) {
        if instances[index].connection != .killed { kill(index) }
        instances[index].run += 1
        instances[index].connection = .up
        instances[index].owns = Array(repeating: false, count: settings.partitionCount)
        instances[index].shutdownCompletedAt = nil
        instances[index].leases = PartitionLeases(instance: instances[index].id, incarnation: random.next(), settings: settings,
                                                  now: localNow(index))
        subscribe(index)
    }

    mutating func shutdown(_ index: Int) {
        feed(index, .shutdown)
    }

    /// A new watch: every key as it is now, then `caughtUp`, then every later write.
    private mutating func subscribe(_ index: Int) {
        let at = max(instances[index].watchFreeAt, time + delay())
        let run = instances[index].run
        for (key, entry) in bucket.sorted(by: { $0.key.name < $1.key.name }) {
            events.push(.report(instance: index, run: run, .observed(key, revision: entry.revision, value: entry.value)), at: at)
        }
        events.push(.report(instance: index, run: run, .caughtUp), at: at)
        instances[index].watchFreeAt = at
    }

    // MARK: Running

    /// Runs the events of the next `duration` of virtual time.
    mutating func run(for duration: Duration) {
        let end = time + duration.inNanoseconds
        while let next = events.nextTime, next <= end { step() }
        time = end
    }

    /// Runs until `condition` holds (checked every 10 ms of virtual time) or `limit` passed;
    /// returns the virtual time it took, nil if it never held.
    mutating func run(until condition: (LeaseSimulation) -> Bool, within limit: Duration) -> Duration? {
        let begin = time
        let end = time + limit.inNanoseconds
        while time <= end {
            if condition(self) { return .nanoseconds(time - begin) }
            run(for: .milliseconds(10))
        }
        return nil
    }

    private mutating func step() {
        guard let (at, event) = events.pop() else { return }
        time = at
        switch event {
        case .request(let index, let run, let write):
            arrive(write, from: index, run: run)
        case .answer(let index, let run, let write, let outcome):
            if isReachable(index, run: run) { feed(index, .completed(write, outcome)) }
        case .report(let index, let run, let input):
            if isReachable(index, run: run) { feed(index, input) }
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

    private func isReachable(_ index: Int, run: Int) -> Bool {
        instances[index].run == run && instances[index].connection == .up
    }

    /// A request reaches the bucket (also one sent before its instance died).
    private mutating func arrive(_ write: BucketWrite, from index: Int, run: Int) {
        let outcome = apply(write)
        if case .stored(let revision) = outcome, let entry = bucket[write.key] {
            for receiver in instances.indices where instances[receiver].connection == .up && !drops() {
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
        case .stopOwning(let partition):
            if !instances[index].owns[partition] { fail("\(id) stopped partition \(partition) it does not own") }
            instances[index].owns[partition] = false
            removeOwner(index, of: partition)
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
    func localNow(_ index: Int) -> Instant { instances[index].localNow(at: time) }

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
    var activeInstances: [Int] {
        instances.indices.filter { instances[$0].connection == .up && instances[$0].leases.phase == .running }
    }

    /// Partitions each instance (not killed) holds a fence for now.
    func holdings() -> [Int: [Int]] {
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
    var isBalanced: Bool {
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
    var summary: String {
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

    mutating func chance(_ probability: Double) -> Bool { random.unit() < probability }

    mutating func pick(_ range: Range<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }
}

/// Events by virtual time, in insertion order among equal times: a binary heap of times over
/// slots holding the events (so that reordering moves no event).
struct EventQueue<Event> {
    private var heap: [(time: Int64, order: UInt64, slot: Int)] = []
    private var slots: [Event?] = []
    private var freeSlots: [Int] = []
    private var pushed: UInt64 = 0

    var nextTime: Int64? { heap.first?.time }

    mutating func push(_ event: Event, at time: Int64) {
        pushed += 1
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = event
        } else {
            slot = slots.count
            slots.append(event)
        }
        heap.append((time, pushed, slot))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (Int64, Event)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < heap.count && precedes(left, first) { first = left }
            if right < heap.count && precedes(right, first) { first = right }
            guard first != parent else { break }
            heap.swapAt(parent, first)
            parent = first
        }
        guard let event = slots[top.slot] else { return nil }
        slots[top.slot] = nil
        freeSlots.append(top.slot)
        return (top.time, event)
    }

    private func precedes(_ a: Int, _ b: Int) -> Bool {
        heap[a].time != heap[b].time ? heap[a].time < heap[b].time : heap[a].order < heap[b].order
    }
}
