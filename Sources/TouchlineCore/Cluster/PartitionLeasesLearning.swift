/// What the instance learns: the watch's reports and the outcomes of its own writes.
extension PartitionLeases {
    /// Takes in a watch report; false when it can only have moved an expiry later (somebody's
    /// renewal, or nothing new), so the schedule still holds.
    mutating func observe(_ key: LeaseKey, revision: Revision, value: ObservedValue, now: Moment, into actions: inout [Action]) -> Bool {
        if case .record(let record) = value, record.holder == instance, record.incarnation == incarnation,
           let sent = withKnowledge(of: key, { $0.take(record.write) }) ?? nil {
            // One of this run's writes, seen before (or instead of) its answer.
            return stored(sent, revision: revision, now: now, into: &actions)
        }
        switch key {
        case .partition(let partition):
            guard isPartition(partition) else { return false }
            let before = partitions[partition].value
            guard partitions[partition].learn(revision, value, now: now) else { return false }
            if leases[partition] != nil {
                // Somebody else wrote the lease (or an own write whose send time is not known
                // any more): it is not held as far as this instance can prove.
                leases[partition] = nil
                actions.append(.stopOwning(partition: partition))
                needsPlan = true
            }
            if !Self.sameAuthor(before, value) { needsPlan = true }
        case .member(let member) where member == instance:
            // An earlier run's late heartbeat, or a delete by an operator: the next heartbeat
            // expects this revision.
            return membership.learn(revision, value, now: now)
        case .member(let member):
            var knowledge = peers[member] ?? KeyKnowledge()
            let before = knowledge.value
            guard knowledge.learn(revision, value, now: now) else { return false }
            peers[member] = knowledge
            if !Self.sameAuthor(before, value) { needsPlan = true }
        }
        return false
    }

    /// Takes in a write's outcome; false when it only moved times later (a renewal stored), so
    /// the schedule still holds.
    mutating func complete(_ write: BucketWrite, _ outcome: WriteOutcome, now: Moment, into actions: inout [Action]) -> Bool {
        // An answer to a write already given up on still tells whether and when it was stored.
        guard let status = knowledge(of: write.key)?.status(of: write.id) else { return false }
        switch outcome {
        case .stored(let revision):
            guard let sent = withKnowledge(of: write.key, { $0.take(write.id) }) ?? nil else { return false }
            return stored(sent, revision: revision, now: now, into: &actions)
        case .conflict:
            // A conflict says the key moved on from what the write expected. If what is known of
            // the key moved on too (another write of this run was stored meanwhile), that
            // explains it and says nothing about the lease; otherwise somebody else wrote: stop,
            // and wait for the watch to show what (a renew interval at most).
            let wait = now + timing.renewInterval
            let isExplained = withKnowledge(of: write.key) { knowledge in
                _ = knowledge.take(write.id)
                guard knowledge.expects(write.change) else { return true }
                knowledge.notBefore = wait
                return false
            } ?? true
            if !isExplained, case .partition(let partition) = write.key, leases[partition] != nil {
                leases[partition] = nil
                actions.append(.stopOwning(partition: partition))
            }
        case .failed:
            if status == .pending {
                let delay = timing.retryDelay
                withKnowledge(of: write.key) { $0.giveUpPending(now: now, delay: delay) }
            }
        }
        needsPlan = true
        return true
    }

    /// One of this run's writes was stored at `revision` (its answer, or the watch showing it).
    /// False for a renewal, which only moves times later: nothing to plan or reschedule.
    private mutating func stored(_ sent: KeyKnowledge.SentWrite, revision: Revision, now: Moment, into actions: inout [Action]) -> Bool {
        let value = sent.write.record.map(ObservedValue.record) ?? .deleted
        switch sent.write.key {
        case .partition(let partition):
            // Superseded already (the watch showed a later write): the write grants nothing.
            // While leaving, or stored too late to be of use, the record stays for the plan to
            // delete or renew.
            let validUntil = sent.sentAt + timing.leaseTTL - timing.safetyMargin
            guard partitions[partition].learn(revision, value, now: now), sent.write.record != nil,
                  phase == .running, validUntil > now else { break }
            let renewDue = sent.sentAt + timing.renewInterval
            if var lease = leases[partition] {
                lease.validUntil = max(lease.validUntil, validUntil)
                lease.renewDue = renewDue
                leases[partition] = lease
                return false
            }
            let fence = Fence(revision)
            leases[partition] = Lease(fence: fence, validUntil: validUntil, renewDue: renewDue)
            actions.append(.startOwning(partition: partition, fence: fence))
        case .member(let member) where member == instance:
            guard membership.learn(revision, value, now: now), sent.write.record != nil else { break }
            heartbeatDue = sent.sentAt + timing.renewInterval
            guard phase == .joining else { return false }
            phase = .running
        case .member(let member):
            // A dead member's heartbeat, deleted.
            _ = peers[member]?.learn(revision, value, now: now)
        }
        needsPlan = true
        return true
    }

    /// The knowledge of `key`; nil for a partition out of range or a peer never seen.
    func knowledge(of key: LeaseKey) -> KeyKnowledge? {
        switch key {
        case .partition(let partition): isPartition(partition) ? partitions[partition] : nil
        case .member(let member) where member == instance: membership
        case .member(let member): peers[member]
        }
    }

    /// Runs `body` on the knowledge of `key`; nil for a partition out of range or a peer never seen.
    @discardableResult
    mutating func withKnowledge<Result>(of key: LeaseKey, _ body: (inout KeyKnowledge) -> Result) -> Result? {
        switch key {
        case .partition(let partition):
            guard isPartition(partition) else { return nil }
            return body(&partitions[partition])
        case .member(let member) where member == instance:
            return body(&membership)
        case .member(let member):
            guard var knowledge = peers[member] else { return nil }
            defer { peers[member] = knowledge }
            return body(&knowledge)
        }
    }

    /// The same holder in the same run (or both absent, or both unreadable): a renewal, which
    /// changes nothing in the balance.
    private static func sameAuthor(_ before: ObservedValue?, _ after: ObservedValue) -> Bool {
        switch (before, after) {
        case (.record(let old), .record(let new)): old.holder == new.holder && old.incarnation == new.incarnation
        case (.unreadable, .unreadable), (.deleted, .deleted), (nil, .deleted): true
        default: false
        }
    }
}
