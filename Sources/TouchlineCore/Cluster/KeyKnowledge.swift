/// What one instance knows of one key of the lease bucket, and of its own writes to that key.
struct KeyKnowledge: Sendable {
    /// A write of this instance to the key, and when it left.
    struct SentWrite: Sendable {
        let write: BucketWrite
        let sentAt: Moment
    }

    /// The newest revision known (from the watch or from an answer); nil while nothing is known.
    private(set) var revision: Revision?
    /// The value at `revision`; nil while nothing is known (after the watch caught up: absent).
    private(set) var value: PartitionLeases.ObservedValue?
    /// When `revision` was learned: the clock a TTL runs on for whoever wrote it.
    private(set) var learnedAt: Moment?
    /// No write of the key before this: the retry delay after a failure; after a conflict, until
    /// a newer revision is learned (a renew interval at most, so a lost watch message cannot
    /// stall the key).
    var notBefore: Moment?
    /// The write out on the key: there is never more than one.
    private(set) var pending: SentWrite? {
        didSet { pendingSentAt = pending?.sentAt }
    }
    /// When `pending` left (kept apart: the schedule reads it for every key, often).
    private(set) var pendingSentAt: Moment?
    /// Writes given up on (failed, unanswered) that the bucket may still have stored, kept for a
    /// lease TTL: if the watch shows one of them, the instance knows when it was sent.
    private(set) var unresolved: [SentWrite] = []

    /// Takes a revision newer than the known one; false, changing nothing, for an older or equal
    /// one (a late or repeated report).
    mutating func learn(_ revision: Revision, _ value: PartitionLeases.ObservedValue, now: Moment) -> Bool {
        if let known = self.revision, revision <= known { return false }
        self.revision = revision
        self.value = value
        learnedAt = now
        notBefore = nil
        return true
    }

    /// The record at the known revision, if it is one.
    var record: LeaseRecord? {
        if case .record(let record) = value { record } else { nil }
    }

    /// Someone's value is there (a record or an unreadable value), as opposed to absent.
    var isWritten: Bool {
        switch value {
        case .record, .unreadable: true
        case .deleted, nil: false
        }
    }

    /// When the author of the value is presumed dead: the TTL its record names after its revision
    /// was learned (``LeaseRecord/ttl``: the author's promise is made on its own settings), or
    /// `unnamedTTL` for an unreadable value; nil when no value is there.
    func expiry(unnamedTTL: Span) -> Moment? {
        guard isWritten, let learnedAt else { return nil }
        return learnedAt + (record.map { Span($0.ttl) } ?? unnamedTTL)
    }

    func isExpired(unnamedTTL: Span, now: Moment) -> Bool {
        expiry(unnamedTTL: unnamedTTL).map { $0 <= now } ?? false
    }

    /// A new write may leave now: none is out and no delay holds it back.
    func isWritable(now: Moment) -> Bool {
        pendingSentAt == nil && notBefore.map { $0 <= now } ?? true
    }

    /// The change that puts `record` in the key: a create when it is absent as far as known,
    /// otherwise an update of the known revision.
    func replacing(with record: LeaseRecord) -> BucketWrite.Change {
        guard let revision, isWritten else { return .create(record) }
        return .update(record, expected: revision)
    }

    /// Whether `change` expects the key as it is known now (a create: absent; otherwise: the
    /// known revision).
    func expects(_ change: BucketWrite.Change) -> Bool {
        switch change {
        case .create: !isWritten
        case .update(_, let expected), .delete(let expected): revision == expected
        }
    }

    /// A delete of the known revision; nil when the key is absent.
    var deletion: BucketWrite.Change? {
        guard let revision, isWritten else { return nil }
        return .delete(expected: revision)
    }

    mutating func sent(_ write: SentWrite) { pending = write }

    enum WriteStatus: Sendable, Equatable {
        /// The write out.
        case pending
        /// Given up on, and perhaps stored.
        case unresolved
    }

    /// Where this write of ours stands; nil for one settled (or never made).
    func status(of id: BucketWrite.ID) -> WriteStatus? {
        if pending?.write.id == id { return .pending }
        return unresolved.contains { $0.write.id == id } ? .unresolved : nil
    }

    /// Removes this write of ours, if it is out or unresolved, and returns it.
    mutating func take(_ id: BucketWrite.ID) -> SentWrite? {
        if let pending, pending.write.id == id {
            self.pending = nil
            return pending
        }
        guard let index = unresolved.firstIndex(where: { $0.write.id == id }) else { return nil }
        return unresolved.remove(at: index)
    }

    /// The write out got no answer: it stays known as unresolved, and the key waits `delay`.
    mutating func giveUpPending(now: Moment, delay: Span) {
        guard let pending else { return }
        unresolved.append(pending)
        self.pending = nil
        notBefore = now + delay
    }

    /// Forgets unresolved writes sent before `instant`: too old to grant anything.
    mutating func forgetUnresolved(sentBefore instant: Moment) {
        if !unresolved.isEmpty && unresolved.contains(where: { $0.sentAt < instant }) { unresolved.removeAll { $0.sentAt < instant } }
    }
}
