/// One instance's side of partition ownership in a cluster: which partitions it holds, as leases
/// in a shared key-value bucket with per-key revisions and compare-and-set writes.
///
/// Pure: no I/O, no clock, no threads. Every input comes with `now` from the instance's
/// monotonic clock (`ContinuousClock`, which keeps counting while the machine sleeps, so a
/// suspended owner wakes up knowing its leases ran out), and returns the ``Action``s the shell
/// performs: conditional writes, start or stop owning a partition, and the end of a shutdown.
/// The shell reports back every write's outcome and whatever the bucket's watch shows.
///
/// The rules (docs/cluster.md, "Partition leases", has them with the reasons):
/// - **Expiry is judged by observers on their own clock**: a lease (or heartbeat) whose key
///   shows no new revision for ``LeaseSettings/leaseTTL`` (``LeaseSettings/memberTTL``), from
///   when the observer learned its latest one, is dead. Taking it over is an update expecting
///   that stale revision, so it fails if the owner renewed meanwhile.
/// - **An owner stops before anyone may take over**: its lease counts as held until the send time
///   of its last stored write of the lease plus `leaseTTL` minus ``LeaseSettings/safetyMargin``,
///   and not after a conflict or a foreign write of the key. ``fence(for:now:)`` says whether a
///   push may go.
/// - **Balance**: each instance aims at its ``PartitionShares`` share among the live members,
///   never above ⌈P/N⌉, acquiring free or dead partitions in its own ``PartitionPreference``
///   order and releasing from the other end.
/// - **Nothing is assumed**: a new run (also a restart under the same ``InstanceID``) owns only
///   what it acquired itself; an earlier run's leases are somebody else's until they expire.
public struct PartitionLeases: Sendable {
    public typealias Instant = ContinuousClock.Instant

    public let instance: InstanceID
    /// Random per process start: tells this run's writes from an earlier run's (``LeaseRecord``).
    public let incarnation: UInt64
    public let settings: LeaseSettings
    public internal(set) var phase = Phase.joining

    /// A partition this instance owns.
    struct Lease: Sendable {
        let fence: Fence
        /// Pushes may go until then: last stored write's send time + TTL − margin.
        var validUntil: Moment
        var renewDue: Moment
    }

    var partitions: [KeyKnowledge]
    var leases: [Lease?]
    /// This instance's own heartbeat key.
    var membership = KeyKnowledge()
    var heartbeatDue: Moment?
    /// The other members' heartbeat keys.
    var peers: [InstanceID: KeyKnowledge] = [:]
    var isCaughtUp = false
    var lastWrite: UInt64 = 0
    /// The latest `now` seen: the machine's clock never goes back.
    var latestNow: Moment
    /// The instant `Moment`s count from (the `now` of the initializer).
    let origin: Instant
    let timing: LeaseTiming
    /// When the last plan ran: expiries up to then have been weighed.
    var plannedAt: Moment?
    var needsPlan = false
    var scheduledTick: Moment?
    /// The earliest lease end or write timeout; none passed before it.
    var settleDeadline: Moment?
    var leavingSince: Moment?
    var housekeepingDue: Moment?
    let preference: PartitionPreference

    /// A new run of `instance`. `incarnation` must be fresh at every process start (a random
    /// number: `UInt64.random(in: .min ... .max)`). The shell then starts the bucket's watch and
    /// feeds what it reports; nothing is written before ``Input/caughtUp``.
    public init(instance: InstanceID, incarnation: UInt64, settings: LeaseSettings, now: Instant) {
        self.instance = instance
        self.incarnation = incarnation
        self.settings = settings
        partitions = Array(repeating: KeyKnowledge(), count: settings.partitionCount)
        leases = Array(repeating: nil, count: settings.partitionCount)
        origin = now
        latestNow = Moment(nanoseconds: 0)
        timing = LeaseTiming(settings)
        preference = PartitionPreference(instance: instance, partitionCount: settings.partitionCount)
    }

    public mutating func handle(_ input: Input, now instant: Instant) -> [Action] {
        guard phase != .left else { return [] }
        let now = max(moment(instant), latestNow)
        latestNow = now
        var actions: [Action] = []
        // Most inputs are the watch showing somebody renew, or a renewal stored: those only move
        // times later and leave the schedule as it was (a tick that comes early is harmless).
        let isPastDeadline = settleDeadline.map { $0 <= now } ?? false
        if isPastDeadline { settleOverdue(now: now, into: &actions) }
        var reschedule = true
        switch input {
        case .observed(let key, let revision, let value):
            reschedule = observe(key, revision: revision, value: value, now: now, into: &actions) || isPastDeadline
        case .caughtUp:
            if !isCaughtUp {
                isCaughtUp = true
                heartbeatDue = now
                needsPlan = true
            }
        case .completed(let write, let outcome):
            reschedule = complete(write, outcome, now: now, into: &actions) || isPastDeadline
        case .tick:
            needsPlan = true
        case .shutdown:
            leave(now: now, into: &actions)
        }
        if needsPlan {
            plan(now: now, into: &actions)
            reschedule = true
        }
        if reschedule { (scheduledTick, settleDeadline) = schedule() }
        return actions
    }

    /// The fence of `partition` if this instance may act as its owner at `now`: check it before
    /// every push, since the lease can run out between two inputs. nil once the lease may have
    /// been lost, even before the `stopOwning` of the next input.
    public func fence(for partition: Int, now: Instant) -> Fence? {
        fenceHold(for: partition, now: now)?.fence
    }

    /// The fence of `partition` with the instant it stops letting this instance act (unless a
    /// renewal moves it later), if it lets it act at `now`: for metrics, and for checking across
    /// instances that no two fences of a partition ever overlap in time.
    public func fenceHold(for partition: Int, now: Instant) -> (fence: Fence, until: Instant)? {
        guard isPartition(partition), let lease = leases[partition], moment(now) < lease.validUntil else { return nil }
        return (lease.fence, instant(lease.validUntil))
    }

    /// The partitions owned as of the last input (``fence(for:now:)`` says until when).
    public var ownedPartitions: [Int] { leases.indices.filter { leases[$0] != nil } }

    /// When the shell should feed the next ``Input/tick``: the next renewal, write timeout or
    /// lease end, and the next expiry of somebody else's key. nil after the shutdown, and
    /// before the watch caught up (nothing is due until an input comes).
    public var nextTick: Instant? { scheduledTick.map(instant) }

    /// The members that count in the balance at `now`: this instance while joining or running,
    /// and every other whose heartbeat is fresh.
    public func liveMembers(now: Instant) -> [InstanceID] {
        let peers = livePeers(now: moment(now))
        return ((phase == .joining || phase == .running) ? [instance] + peers : peers).sorted()
    }

    /// The other members whose heartbeat is fresh, in no particular order.
    func livePeers(now: Moment) -> [InstanceID] {
        let memberTTL = timing.memberTTL
        return peers.compactMap { peer, knowledge in knowledge.isWritten && !knowledge.isExpired(unnamedTTL: memberTTL, now: now) ? peer : nil }
    }

    /// When the next tick is due, and the earliest lease end or write timeout (past it, an
    /// input settles what is overdue before anything else).
    private func schedule() -> (tick: Moment?, deadline: Moment?) {
        // Before the watch caught up nothing is written, so nothing can fall due.
        guard phase != .left, isCaughtUp else { return (nil, nil) }
        var earliest: Moment?
        var deadline: Moment?
        func due(_ instant: Moment) {
            if earliest.map({ instant < $0 }) ?? true { earliest = instant }
        }
        func settles(_ instant: Moment) {
            due(instant)
            if deadline.map({ instant < $0 }) ?? true { deadline = instant }
        }
        // Conditions (expiries, retry delays) that passed before the last plan were weighed then.
        let weighedUntil = plannedAt ?? latestNow
        func condition(_ instant: Moment?) {
            if let instant, instant > weighedUntil { due(instant) }
        }
        let writeTimeout = timing.writeTimeout
        for partition in partitions.indices {
            if let sentAt = partitions[partition].pendingSentAt {
                settles(sentAt + writeTimeout)
            } else if let renewDue = leases[partition]?.renewDue {
                due(max(renewDue, partitions[partition].notBefore ?? renewDue))
            } else {
                condition(partitions[partition].notBefore)
                condition(partitions[partition].expiry(unnamedTTL: timing.leaseTTL))
            }
            if let validUntil = leases[partition]?.validUntil { settles(validUntil) }
        }
        if let sentAt = membership.pendingSentAt {
            settles(sentAt + writeTimeout)
        } else if phase == .joining || phase == .running, let heartbeatDue {
            due(max(heartbeatDue, membership.notBefore ?? heartbeatDue))
        } else {
            condition(membership.notBefore)
        }
        for knowledge in peers.values {
            if let sentAt = knowledge.pendingSentAt { settles(sentAt + writeTimeout) }
            condition(knowledge.notBefore)
            condition(knowledge.expiry(unnamedTTL: timing.memberTTL))
        }
        if let leavingSince { due(leavingSince + timing.leaseTTL) }
        return (earliest, deadline)
    }

    /// A partition number this cluster has (anything else is some other cluster's key, or junk).
    func isPartition(_ partition: Int) -> Bool { partition >= 0 && partition < settings.partitionCount }

    private func moment(_ instant: Instant) -> Moment { Moment(nanoseconds: (instant - origin).inNanoseconds) }

    private func instant(_ moment: Moment) -> Instant { origin + .nanoseconds(moment.nanoseconds) }

    /// Leases past their end stop; writes past their timeout count as failed.
    private mutating func settleOverdue(now: Moment, into actions: inout [Action]) {
        let retryDelay = timing.retryDelay
        for partition in leases.indices {
            if let lease = leases[partition], lease.validUntil <= now {
                leases[partition] = nil
                actions.append(.stopOwning(partition: partition))
                needsPlan = true
            }
            if isOverdue(partitions[partition], now: now) {
                partitions[partition].giveUpPending(now: now, delay: retryDelay)
                needsPlan = true
            }
        }
        if isOverdue(membership, now: now) {
            membership.giveUpPending(now: now, delay: retryDelay)
            needsPlan = true
        }
        for peer in peers.keys.filter({ isOverdue(peers[$0], now: now) }) {
            peers[peer]?.giveUpPending(now: now, delay: retryDelay)
            needsPlan = true
        }
    }

    private func isOverdue(_ knowledge: KeyKnowledge?, now: Moment) -> Bool {
        knowledge?.pendingSentAt.map { $0 + timing.writeTimeout <= now } ?? false
    }

    private mutating func leave(now: Moment, into actions: inout [Action]) {
        guard phase == .joining || phase == .running else { return }
        phase = .leaving
        leavingSince = now
        for partition in ownedPartitions {
            leases[partition] = nil
            actions.append(.stopOwning(partition: partition))
        }
        needsPlan = true
    }
}
