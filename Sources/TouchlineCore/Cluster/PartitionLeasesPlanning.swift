/// What the instance does about what it knows: heartbeat, renew, balance, leave.
extension PartitionLeases {
    mutating func plan(now: Moment, into actions: inout [Action]) {
        needsPlan = false
        plannedAt = now
        if housekeepingDue.map({ $0 <= now }) ?? true {
            forgetStaleKnowledge(now: now)
            housekeepingDue = now + timing.renewInterval
        }
        switch phase {
        case .joining:
            if isCaughtUp && membership.isWritable(now: now) { put(.member(instance), now: now, into: &actions) }
        case .running:
            let livePeers = livePeers(now: now)
            rebalance(livePeers: livePeers, now: now, into: &actions)
            renew(now: now, into: &actions)
            if !livePeers.contains(where: { $0 < instance }) { deleteDeadHeartbeats(now: now, into: &actions) }
        case .leaving:
            deleteOwnRecords(now: now, into: &actions)
        case .left:
            break
        }
    }

    // MARK: Balance

    /// Acquires or releases partitions toward this instance's share.
    private mutating func rebalance(livePeers: [InstanceID], now: Moment, into actions: inout [Action]) {
        var holdings = Dictionary(uniqueKeysWithValues: livePeers.map { ($0, 0) })
        var held = 0
        for partition in partitions.indices {
            let knowledge = partitions[partition]
            if leases[partition] != nil || knowledge.pending?.write.record != nil {
                held += 1
            } else if let holder = knowledge.record?.holder, holder != instance, let count = holdings[holder],
                      !knowledge.isExpired(unnamedTTL: timing.leaseTTL, now: now) {
                holdings[holder] = count + 1
            }
        }
        holdings[instance] = held
        let share = PartitionShares(partitionCount: settings.partitionCount, holdings: holdings)[instance]
        if held > share {
            release(held - share, now: now, into: &actions)
        } else if held < share {
            acquire(share - held, now: now, into: &actions)
        }
    }

    /// Gives up the least wanted leases: stop owning first, then delete the lease (expecting its
    /// revision), so a new owner can only start after this one stopped.
    private mutating func release(_ count: Int, now: Moment, into actions: inout [Action]) {
        var remaining = count
        for partition in preference.order.reversed() where remaining > 0 {
            guard leases[partition] != nil, partitions[partition].isWritable(now: now) else { continue }
            leases[partition] = nil
            actions.append(.stopOwning(partition: partition))
            delete(.partition(partition), now: now, into: &actions)
            remaining -= 1
        }
    }

    /// Reaches for the most wanted partitions that are free, dead, or this run's own leftovers
    /// (those first: the others count them as this instance's already).
    private mutating func acquire(_ count: Int, now: Moment, into actions: inout [Action]) {
        let candidates = preference.order.filter { isAcquirable($0, now: now) }
        let leftovers = candidates.filter { isOwn(partitions[$0].record) }
        for partition in (leftovers + candidates.filter { !isOwn(partitions[$0].record) }).prefix(count) {
            put(.partition(partition), now: now, into: &actions)
        }
    }

    private func isAcquirable(_ partition: Int, now: Moment) -> Bool {
        let knowledge = partitions[partition]
        guard leases[partition] == nil, knowledge.isWritable(now: now) else { return false }
        switch knowledge.value {
        case nil, .deleted: return true
        case .record(let record) where isOwn(record): return true
        case .record, .unreadable: return knowledge.isExpired(unnamedTTL: timing.leaseTTL, now: now)
        }
    }

    /// Written by this run (an earlier run of the same instance is somebody else).
    func isOwn(_ record: LeaseRecord?) -> Bool {
        record.map { $0.holder == instance && $0.incarnation == incarnation } ?? false
    }

    // MARK: Renewal

    /// Once a lease or the heartbeat is due, renews it together with every other due within half
    /// a renew interval: early renewals only lengthen validity, and batches need fewer ticks.
    private mutating func renew(now: Moment, into actions: inout [Action]) {
        let heartbeatWritable = membership.isWritable(now: now)
        let isAnyDue = (heartbeatWritable && heartbeatDue.map { $0 <= now } ?? false)
            || leases.indices.contains { leases[$0].map { $0.renewDue <= now } ?? false && partitions[$0].isWritable(now: now) }
        guard isAnyDue else { return }
        let horizon = now + timing.renewInterval / 2
        if heartbeatWritable, heartbeatDue.map({ $0 <= horizon }) ?? false { put(.member(instance), now: now, into: &actions) }
        for partition in leases.indices where leases[partition].map({ $0.renewDue <= horizon }) ?? false && partitions[partition].isWritable(now: now) {
            put(.partition(partition), now: now, into: &actions)
        }
    }

    // MARK: Housekeeping

    /// Deletes heartbeats that expired (the first live member by name does, so that an instance
    /// starting later does not count the dead for a member TTL). The delete expects the stale
    /// revision: a member that was only slow and heartbeats again keeps its key.
    private mutating func deleteDeadHeartbeats(now: Moment, into actions: inout [Action]) {
        let memberTTL = timing.memberTTL
        let dead = peers.compactMap { peer, knowledge in
            knowledge.isExpired(unnamedTTL: memberTTL, now: now) && knowledge.isWritable(now: now) ? peer : nil
        }
        // In name order, so that a run repeats exactly from the same inputs.
        for peer in dead.sorted() { delete(.member(peer), now: now, into: &actions) }
    }

    /// Forgets unresolved writes too old to grant anything, and members deleted a member TTL
    /// ago (once per renew interval: nothing depends on it being sooner).
    private mutating func forgetStaleKnowledge(now: Moment) {
        let oldestUseful = now - timing.leaseTTL
        for partition in partitions.indices { partitions[partition].forgetUnresolved(sentBefore: oldestUseful) }
        membership.forgetUnresolved(sentBefore: oldestUseful)
        let memberTTL = timing.memberTTL
        let forgotten = peers.compactMap { peer, knowledge in
            knowledge.value == .deleted && knowledge.pendingSentAt == nil && knowledge.learnedAt.map { $0 + memberTTL <= now } ?? false ? peer : nil
        }
        for peer in forgotten { peers[peer] = nil }
    }

    // MARK: Leaving

    /// Deletes the heartbeat (first, so the others' shares grow before the partitions are free)
    /// and every lease this run wrote, then completes once none is left, or after a lease TTL
    /// (by then the others take over anyway).
    private mutating func deleteOwnRecords(now: Moment, into actions: inout [Action]) {
        if isOwn(membership.record) && membership.isWritable(now: now) { delete(.member(instance), now: now, into: &actions) }
        for partition in partitions.indices where isOwn(partitions[partition].record) && partitions[partition].isWritable(now: now) {
            delete(.partition(partition), now: now, into: &actions)
        }
        let isAnythingLeft = membership.pending != nil || isOwn(membership.record)
            || partitions.contains { $0.pending != nil || isOwn($0.record) }
        if !isAnythingLeft || leavingSince.map({ $0 + timing.leaseTTL <= now }) ?? true {
            phase = .left
            actions.append(.shutdownComplete)
        }
    }

    // MARK: Writes

    /// Writes this run's record into `key`: a create if absent as far as known, else an update
    /// of the known revision.
    private mutating func put(_ key: LeaseKey, now: Moment, into actions: inout [Action]) {
        guard let knowledge = knowledge(of: key) else { return }
        let id = nextWriteID()
        let record = LeaseRecord(holder: instance, incarnation: incarnation, write: id, ttl: ttl(of: key))
        send(BucketWrite(id: id, key: key, change: knowledge.replacing(with: record)), now: now, into: &actions)
    }

    /// The TTL this run's records name: the lease's in a partition's, the member's in its heartbeat.
    private func ttl(of key: LeaseKey) -> Duration {
        if case .partition = key { settings.leaseTTL } else { settings.memberTTL }
    }

    /// Deletes `key`, expecting its known revision.
    private mutating func delete(_ key: LeaseKey, now: Moment, into actions: inout [Action]) {
        guard let deletion = knowledge(of: key)?.deletion else { return }
        send(BucketWrite(id: nextWriteID(), key: key, change: deletion), now: now, into: &actions)
    }

    private mutating func send(_ write: BucketWrite, now: Moment, into actions: inout [Action]) {
        withKnowledge(of: write.key) { $0.sent(KeyKnowledge.SentWrite(write: write, sentAt: now)) }
        actions.append(.write(write))
    }

    private mutating func nextWriteID() -> BucketWrite.ID {
        lastWrite += 1
        return BucketWrite.ID(sequence: lastWrite)
    }
}
