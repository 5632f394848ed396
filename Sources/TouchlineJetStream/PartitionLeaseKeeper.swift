import Foundation
import NATS
import TouchlineCore
import TouchlineRuntime

/// The shell of ``PartitionLeases`` on a JetStream key-value bucket: it feeds the machine the
/// bucket's watch, performs its conditional writes as compare-and-set publishes, ticks it when
/// it asks, and hands `startOwning`/`stopOwning` to the gateway.
///
/// Loop-confined: create, start and use it on `loop`; everything it reports runs there.
///
/// The bucket's own encoding is the client libraries': a key's value is the last message on
/// `$KV.<bucket>.<key>`, its revision that message's stream sequence, and a delete is a message
/// with the header `KV-Operation: DEL`.
///
/// **Compare-and-set that holds on a replicated stream.** nats-server 2.9 checks a publish's
/// expected last sequence *of its subject* before proposing it to the stream's replicas, without
/// counting writes still in flight, so two writers expecting the same revision of a key can both
/// be stored (measured: `JetStreamTests`, docs/cluster.md). Its expected last sequence *of the
/// stream* does count them, and holds. So every write here expects the stream's last sequence
/// as the keeper has seen it (its watch delivers every message of the bucket), after checking
/// the key's revision against what it has seen: stored, the key had that revision when it was
/// stored, because nothing at all was stored since. A write refused because somebody else wrote
/// another key meanwhile waits for the watch to show what moved and is sent again if its key is
/// unchanged; one whose key moved is a conflict. Writes go one at a time, in the order asked.
public final class PartitionLeaseKeeper: @unchecked Sendable {
    /// What the gateway must do with a partition.
    public enum Ownership: Sendable, Equatable {
        case start(partition: Int, fence: Fence)
        case stop(partition: Int)
        /// After ``shutdown()``: every lease was released or given up.
        case left
    }

    public let bucket: String
    private let jetStream: any JetStreamClient
    private let loop: EventLoop
    private let onOwnership: (Ownership) -> Void
    private var machine: PartitionLeases
    private var watch: (any MessageSubscription)?
    private var timer: LoopTimer?
    /// The bucket as the watch and this keeper's own stored writes showed it: the stream's last
    /// sequence, and each key's last revision with whether it is a delete.
    private var head: UInt64 = 0
    private var keys: [LeaseKey: (revision: UInt64, deleted: Bool)] = [:]
    /// Writes the machine asked for, in order; the first is in flight or waiting for the watch.
    private var writes: [BucketWrite] = []
    private var sending: Sending?
    private var writeTimer: LoopTimer?
    private let writeTimeout: Duration
    /// How long one attempt at a new watch waits for the cluster to answer, and how long after a
    /// failed one the next starts.
    private let watchRenewalLimit: Duration
    private let retryDelay: Duration
    /// Set by ``abandon()``: answers still arriving change nothing and send nothing.
    private var abandoned = false

    /// The lease bucket of the deployment named `prefix`.
    public static func bucketName(prefix: String) -> String { "\(prefix)_leases" }

    /// Creates the bucket if needed (a JetStream request: call from a starting thread, not the
    /// loop) and a keeper for `instance`. Nothing happens until ``start()``.
    /// `fences` is told what the keeper holds after every input, for the last checks of side
    /// effects on other threads. `maximumBytes`: the bucket's size limit.
    public static func make(jetStream: any JetStreamClient, bucket: String, replicas: Int, maximumBytes: Int? = nil, instance: InstanceID,
                            settings: LeaseSettings,
                            fences: PartitionFences? = nil, loop: EventLoop,
                            onOwnership: @escaping (Ownership) -> Void) throws(NATSError) -> PartitionLeaseKeeper {
        try JetStream.retryingWhileForming { () throws(NATSError) in try jetStream.ensureKeyValueBucket(bucket, replicas: replicas, maximumBytes: maximumBytes) }
        let state = try JetStream.retryingWhileForming { () throws(NATSError) in try jetStream.streamState("KV_\(bucket)") }
        let emptyThrough = (state?.messages ?? 0) == 0 ? state?.lastSequence ?? 0 : nil
        return PartitionLeaseKeeper(jetStream: jetStream, bucket: bucket, instance: instance, settings: settings, fences: fences, loop: loop,
                                    emptyThrough: emptyThrough, onOwnership: onOwnership)
    }

    /// The bucket held no message at start, and its stream's last sequence was this.
    private let emptyThrough: UInt64?
    private let fences: PartitionFences?

    private init(jetStream: any JetStreamClient, bucket: String, instance: InstanceID, settings: LeaseSettings, fences: PartitionFences?,
                 loop: EventLoop, emptyThrough: UInt64?, onOwnership: @escaping (Ownership) -> Void) {
        self.jetStream = jetStream
        self.fences = fences
        self.bucket = bucket
        self.loop = loop
        self.onOwnership = onOwnership
        self.emptyThrough = emptyThrough
        writeTimeout = settings.writeTimeout
        watchRenewalLimit = settings.leaseTTL
        retryDelay = settings.retryDelay
        machine = PartitionLeases(instance: instance, incarnation: UInt64.random(in: 1 ... .max), settings: settings,
                                  now: ContinuousClock.now)
    }

    /// Starts watching the bucket and ticking (on the loop, before it serves anything else: the
    /// watch's creation waits for the cluster). A cluster that does not answer the creation in
    /// time (busy, or electing a leader) is asked again for as long as ``make`` waits for the
    /// bucket, instead of failing the gateway's start (seen once on a loaded CI host).
    public func start() throws(NATSError) {
        watch = try JetStream.retryingWhileForming { () throws(NATSError) in try subscribeWatch(generation: watchGeneration) }
        lastStored = ContinuousClock.now
        if let emptyThrough {
            seenThrough = emptyThrough
            feed(.caughtUp)
        }
        feed(.tick)
    }

    /// Leaves the cluster: ownership stops at once, the leases are deleted, then ``Ownership/left``.
    public func shutdown() { feed(.shutdown) }

    /// The lease revision that lets this instance act for `partition` now, or nil: check it
    /// before every push, since a lease can be lost between two ticks.
    public func fence(for partition: Int) -> Fence? { machine.fence(for: partition, now: ContinuousClock.now) }

    /// ``fence(for:)`` with the instant it runs out unless renewed.
    public func fenceHold(for partition: Int) -> (fence: Fence, until: ContinuousClock.Instant)? {
        machine.fenceHold(for: partition, now: ContinuousClock.now)
    }

    public var ownedPartitions: [Int] { machine.ownedPartitions }

    /// Where the machine is (joining, running, leaving, left): for readiness and diagnostics.
    public var phase: PartitionLeases.Phase { machine.phase }

    /// The members counted in the balance now.
    public var liveMembers: [InstanceID] { machine.liveMembers(now: ContinuousClock.now) }

    /// Stops watching and ticking without a word to the others (a crash, for tests; their
    /// leases then expire).
    public func abandon() {
        abandoned = true
        fences?.update([:])
        watch?.cancel()
        watch = nil
        timer?.cancel()
        timer = nil
        writeTimer?.cancel()
        watchRetryTimer?.cancel()
        writes = []
        sending = nil
    }

    /// The bucket's watch: the last value of each key, then every change.
    private func subscribeWatch(generation: Int) throws(NATSError) -> any MessageSubscription {
        try jetStream.subscribeOrdered(to: "$KV.\(bucket).>", from: .lastPerSubject, loop: loop) { [weak self] message in
            self?.observed(message, watch: generation)
        }
    }

    // MARK: A complete view

    /// The stream sequence through which this keeper has seen every message of the bucket: set
    /// when a watch has delivered the last value of each key up to the stream's end, moved on by
    /// each next message. nil while that is not known (before, and after a gap until a new
    /// watch caught up): writes are held then, since a write decided on a view with a message
    /// missing could take a lease whose renewal it did not see (the stream-wide compare-and-set
    /// holds only against what came after the view's last message).
    private var seenThrough: UInt64?
    /// Which watch's messages count: one made earlier may still deliver until it is cancelled.
    private var watchGeneration = 0
    /// Gaps seen in the watch, each followed by a new watch (`/metrics`).
    public private(set) var watchGaps = 0

    /// Follows the watch's sequence; a message after a gap makes the view incomplete.
    private func followSequence(_ sequence: UInt64, pending: UInt64?) {
        guard let through = seenThrough else {
            // A watch's first delivery with nothing pending reaches the stream's end.
            if pending == 0 { seenThrough = sequence }
            return
        }
        if sequence == through + 1 {
            seenThrough = sequence
        } else if sequence > through + 1 {
            watchGaps += 1
            renewWatch()
        }
    }

    /// A write refused because the stream moved on, and no newer message on the watch for a
    /// whole write timeout: the watch is not delivering (its server died, and the client's
    /// ordered consumer can take many seconds to notice). It is made anew, from the last value
    /// of each key, on a thread of its own (creating a consumer waits for the cluster); what it
    /// delivers again is old news to the machine.
    ///
    /// Until the new watch has caught up, the view is not known complete, and writes wait. An
    /// attempt the cluster does not answer within a lease (no quorum, the client's server gone)
    /// is followed by another a retry delay later, for as long as it takes: a keeper left without
    /// a watch would hold its writes for good (seen once after a quorum loss: the gateway never
    /// served again).
    private func renewWatch() {
        guard !abandoned else { return }
        watchGeneration += 1
        seenThrough = nil
        guard !renewingWatch else { return }
        renewingWatch = true
        let loop = loop
        let generation = watchGeneration
        Thread { [weak self] in
            guard let self else { return }
            let renewed = Result { () throws(NATSError) -> (any MessageSubscription, JetStream.StreamState?) in
                // Read first: a stream then holding nothing delivers nothing to catch up with.
                let limit = watchRenewalLimit
                let state = try JetStream.retryingWhileForming(for: limit) { () throws(NATSError) in try jetStream.streamState("KV_\(bucket)") }
                return (try JetStream.retryingWhileForming(for: limit) { () throws(NATSError) in try subscribeWatch(generation: generation) }, state)
            }
            loop.execute { [weak self] in
                guard let self else { return }
                renewingWatch = false
                guard case .success(let (subscription, state)) = renewed, !abandoned, watch != nil else {
                    if case .success(let (subscription, _)) = renewed { subscription.cancel() }
                    if case .failure(let error) = renewed, !abandoned, watch != nil { retryWatch(after: error) }
                    return
                }
                watch?.cancel()
                watch = subscription
                // A gap seen meanwhile asked for a watch newer than this one.
                guard generation == watchGeneration else { return renewWatch() }
                if seenThrough == nil, let state, state.messages == 0 { seenThrough = state.lastSequence }
                resendHeldWrite()
            }
        }.start()
    }

    private var renewingWatch = false
    private var watchRetryTimer: LoopTimer?
    /// Attempts at a new watch the cluster did not answer (`/metrics`, tests).
    public private(set) var watchRenewalFailures = 0

    private func retryWatch(after error: NATSError) {
        watchRenewalFailures += 1
        writeFailed("its watch of the lease bucket cannot be made again: \(error)")
        let timer = watchRetryTimer ?? LoopTimer(loop: loop) { [weak self] in
            guard let self, !abandoned, watch != nil, seenThrough == nil else { return }
            renewWatch()
        }
        watchRetryTimer = timer
        timer.schedule(after: retryDelay)
    }

    // MARK: Inputs

    private func observed(_ message: NATSMessage, watch generation: Int) {
        guard watch != nil, generation == watchGeneration, let revision = message.stream?.sequence else { return }
        let wasComplete = seenThrough != nil
        followSequence(revision, pending: message.stream?.pending)
        if !wasComplete, seenThrough != nil { resendHeldWrite() }
        // Every message moves the bucket's head, a key of this protocol's or not: writes expect
        // the stream's last sequence, and a key written by anyone else (an operator's probe)
        // would otherwise leave them refused for good, and the view never caught up.
        head = max(head, revision)
        if let key = LeaseKey(name: String(message.subject.dropFirst("$KV.\(bucket).".count))) {
            let operation = message.headers["KV-Operation"]
            let deleted = operation == "DEL" || operation == "PURGE"
            if revision >= keys[key]?.revision ?? 0 { keys[key] = (revision, deleted) }
            let value: PartitionLeases.ObservedValue = deleted ? .deleted : LeaseRecord(encoded: message.payload).map { .record($0) } ?? .unreadable
            feed(.observed(key, revision: Revision(revision), value: value))
        }
        if message.stream?.pending == 0 { feed(.caughtUp) }
        // A write refused because the stream had moved on goes again once the watch shows how.
        if let sending, sending.refusedAt.map({ head > $0 }) == true { send(sending.write, since: sending.since) }
    }

    private func feed(_ input: PartitionLeases.Input) {
        guard !abandoned else { return }
        let now = ContinuousClock.now
        let actions = machine.handle(input, now: now)
        publishHolds(now: now)
        for action in actions { perform(action) }
        scheduleTick()
    }

    /// Tells ``fences`` what the machine holds now, before the gateway hears of any change: a
    /// partition it starts owning is writable by the time it takes it up.
    private func publishHolds(now: ContinuousClock.Instant) {
        guard let fences else { return }
        var held: [Int: (fence: Fence, until: ContinuousClock.Instant)] = [:]
        for partition in machine.ownedPartitions {
            if let hold = machine.fenceHold(for: partition, now: now) { held[partition] = hold }
        }
        fences.update(held)
    }

    private func scheduleTick() {
        guard watch != nil, let next = machine.nextTick else { return }
        let timer = timer ?? LoopTimer(loop: loop) { [weak self] in self?.feed(.tick) }
        self.timer = timer
        timer.cancel()
        timer.schedule(after: max(.zero, next - ContinuousClock.now))
    }

    // MARK: Actions

    private func perform(_ action: PartitionLeases.Action) {
        switch action {
        case .write(let write):
            writes.append(write)
            sendNext()
        case .startOwning(let partition, let fence): onOwnership(.start(partition: partition, fence: fence))
        case .stopOwning(let partition): onOwnership(.stop(partition: partition))
        case .shutdownComplete:
            abandon()
            onOwnership(.left)
        }
    }

    // MARK: Writes

    /// The write at the head of the queue: when it was first sent, and the stream's last
    /// sequence it expected when the stream refused it (it waits for the watch to pass that).
    private struct Sending {
        let write: BucketWrite
        let since: ContinuousClock.Instant
        var refusedAt: UInt64?
        /// Held until the view of the bucket is known complete again.
        var heldForTheView = false
    }

    /// Sends the write held for an incomplete view, now that the view is complete.
    private func resendHeldWrite() {
        guard let sending, sending.heldForTheView, seenThrough != nil else { return }
        send(sending.write, since: sending.since)
    }

    private func sendNext() {
        guard sending == nil, let write = writes.first else { return }
        send(write, since: ContinuousClock.now)
    }

    /// When the cluster last stored one of this keeper's writes (its start, before the first),
    /// and why the last write since then failed, if one did.
    private var lastStored = ContinuousClock.now
    private var lastFailure: String?

    /// Since when, and why, the cluster has stored none of this keeper's writes, once that has
    /// lasted `longerThan`. A keeper at work has its heartbeat stored every renewal, so this is
    /// the cluster not taking writes: without a quorum of its servers no lease is renewed and
    /// no partition is served anywhere. Writes held for an incomplete view of the bucket (its
    /// watch unanswered) count too. `/readyz` and the gateway's answers name it.
    public func writesStalled(longerThan: Duration) -> (since: ContinuousClock.Instant, reason: String)? {
        guard ContinuousClock.now - lastStored > longerThan else { return nil }
        return (lastStored, lastFailure ?? (seenThrough == nil ? "its watch of the lease bucket gets no answer" : "no write was stored"))
    }

    private func writeFailed(_ reason: String) { lastFailure = reason }

    /// Sends `write` expecting the stream's last sequence, if its key is still as it expects.
    private func send(_ write: BucketWrite, since: ContinuousClock.Instant) {
        guard keyMatches(write) else { return finish(write, .conflict) }
        guard ContinuousClock.now - since < writeTimeout else {
            writeFailed("a lease write had no answer within \(writeTimeout)")
            return finish(write, .failed)
        }
        sending = Sending(write: write, since: since, refusedAt: nil, heldForTheView: seenThrough == nil)
        armWriteTimer(since: since)
        guard seenThrough != nil else { return }
        let expectedHead = head
        let subject = JetStream.keySubject(bucket: bucket, key: write.key.name)
        let payload = write.record?.encoded ?? []
        let headers = write.record == nil ? ["KV-Operation": "DEL"] : [:]
        jetStream.publish(payload, to: subject, headers: headers, conditions: .init(expectedLastSequence: expectedHead),
                          loop: loop) { [weak self] result in
            guard let self, !abandoned, sending?.write == write else { return }
            switch result {
            case .success(let acknowledgement):
                // Stored expecting `expectedHead`: it is the very next message of the stream.
                head = max(head, acknowledgement.sequence)
                lastStored = ContinuousClock.now
                lastFailure = nil
                if acknowledgement.sequence >= keys[write.key]?.revision ?? 0 {
                    keys[write.key] = (acknowledgement.sequence, write.record == nil)
                }
                finish(write, .stored(Revision(acknowledgement.sequence)))
            case .failure(let error) where error.isWrongLastSequence:
                if head > expectedHead {
                    send(write, since: since)
                } else {
                    sending?.refusedAt = expectedHead
                }
            case .failure(let error):
                writeFailed("\(error)")
                finish(write, .failed)
            }
        }
    }

    /// Whether the key is as `write` expects, as far as this keeper has seen.
    private func keyMatches(_ write: BucketWrite) -> Bool {
        let known = keys[write.key]
        switch write.change {
        case .create: return known == nil || known!.deleted
        case .update(_, let expected), .delete(let expected): return known.map { !$0.deleted && $0.revision == expected.value } ?? false
        }
    }

    private func finish(_ write: BucketWrite, _ outcome: WriteOutcome) {
        if writes.first == write { writes.removeFirst() }
        sending = nil
        writeTimer?.cancel()
        feed(.completed(write, outcome))
        sendNext()
    }

    /// A write the watch never shows a way through for fails after the write timeout.
    private func armWriteTimer(since: ContinuousClock.Instant) {
        let timer = writeTimer ?? LoopTimer(loop: loop) { [weak self] in
            guard let self, let sending, ContinuousClock.now - sending.since >= writeTimeout else { return }
            if sending.refusedAt != nil {
                renewWatch()
            } else if sending.heldForTheView {
                // Held, not sent: the view is incomplete, and a new watch is on its way (or
                // started now, should none be).
                writeFailed("a lease write was held for \(writeTimeout): the view of the lease bucket is not known complete")
                if !renewingWatch { renewWatch() }
            } else {
                writeFailed("a lease write had no answer within \(writeTimeout)")
            }
            finish(sending.write, .failed)
        }
        writeTimer = timer
        timer.cancel()
        timer.schedule(after: max(.zero, since + writeTimeout - ContinuousClock.now))
    }
}
