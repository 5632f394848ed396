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
/// with the header `KV-Operation: DEL`. A create after a delete is an update expecting the
/// delete's revision (as the client libraries do it), so the keeper remembers the revision of
/// each deleted key it saw.
public final class PartitionLeaseKeeper: @unchecked Sendable {
    /// What the gateway must do with a partition.
    public enum Ownership: Sendable, Equatable {
        case start(partition: Int, fence: Fence)
        case stop(partition: Int)
        /// After ``shutdown()``: every lease was released or given up.
        case left
    }

    public let bucket: String
    private let jetStream: JetStream
    private let loop: EventLoop
    private let onOwnership: (Ownership) -> Void
    private var machine: PartitionLeases
    private var watch: NATSSubscription?
    private var timer: LoopTimer?
    private var deletedRevisions: [LeaseKey: UInt64] = [:]
    /// Set by ``abandon()``: answers still arriving change nothing and send nothing.
    private var abandoned = false

    /// Creates the bucket if needed (a JetStream request: call from a starting thread, not the
    /// loop) and a keeper for `instance`. Nothing happens until ``start()``.
    public static func make(jetStream: JetStream, bucket: String, replicas: Int, instance: InstanceID, settings: LeaseSettings,
                            loop: EventLoop, onOwnership: @escaping (Ownership) -> Void) throws(NATSError) -> PartitionLeaseKeeper {
        try JetStream.retryingTimeouts { () throws(NATSError) in try jetStream.ensureKeyValueBucket(bucket, replicas: replicas) }
        let hasKeys = (try JetStream.retryingTimeouts { () throws(NATSError) in try jetStream.streamState("KV_\(bucket)") }?.messages ?? 0) > 0
        return PartitionLeaseKeeper(jetStream: jetStream, bucket: bucket, instance: instance, settings: settings, loop: loop,
                                    watchStartsCaughtUp: !hasKeys, onOwnership: onOwnership)
    }

    private let watchStartsCaughtUp: Bool

    private init(jetStream: JetStream, bucket: String, instance: InstanceID, settings: LeaseSettings, loop: EventLoop,
                 watchStartsCaughtUp: Bool, onOwnership: @escaping (Ownership) -> Void) {
        self.jetStream = jetStream
        self.bucket = bucket
        self.loop = loop
        self.onOwnership = onOwnership
        self.watchStartsCaughtUp = watchStartsCaughtUp
        machine = PartitionLeases(instance: instance, incarnation: UInt64.random(in: 1 ... .max), settings: settings,
                                  now: ContinuousClock.now)
    }

    /// Starts watching the bucket and ticking (on the loop).
    public func start() throws(NATSError) {
        watch = try jetStream.subscribeOrdered(to: "$KV.\(bucket).>", from: .lastPerSubject, loop: loop) { [weak self] message in
            self?.observed(message)
        }
        if watchStartsCaughtUp { feed(.caughtUp) }
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
        watch?.cancel()
        watch = nil
        timer?.cancel()
        timer = nil
    }

    // MARK: Inputs

    private func observed(_ message: NATSMessage) {
        guard watch != nil, let revision = message.stream?.sequence,
              let key = LeaseKey(name: String(message.subject.dropFirst("$KV.\(bucket).".count))) else { return }
        let operation = message.headers["KV-Operation"]
        let value: PartitionLeases.ObservedValue
        if operation == "DEL" || operation == "PURGE" {
            deletedRevisions[key] = revision
            value = .deleted
        } else {
            deletedRevisions[key] = nil
            value = LeaseRecord(encoded: message.payload).map { .record($0) } ?? .unreadable
        }
        feed(.observed(key, revision: Revision(revision), value: value))
        if message.stream?.pending == 0 { feed(.caughtUp) }
    }

    private func feed(_ input: PartitionLeases.Input) {
        guard !abandoned else { return }
        let actions = machine.handle(input, now: ContinuousClock.now)
        for action in actions { perform(action) }
        scheduleTick()
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
        case .write(let write): send(write)
        case .startOwning(let partition, let fence): onOwnership(.start(partition: partition, fence: fence))
        case .stopOwning(let partition): onOwnership(.stop(partition: partition))
        case .shutdownComplete:
            abandon()
            onOwnership(.left)
        }
    }

    private func send(_ write: BucketWrite) {
        let subject = JetStream.keySubject(bucket: bucket, key: write.key.name)
        let payload: [UInt8]
        var headers: [String: String] = [:]
        let expected: UInt64
        switch write.change {
        case .create(let record):
            payload = record.encoded
            expected = deletedRevisions[write.key] ?? 0
        case .update(let record, let revision):
            payload = record.encoded
            expected = revision.value
        case .delete(let revision):
            payload = []
            headers["KV-Operation"] = "DEL"
            expected = revision.value
        }
        jetStream.publish(payload, to: subject, headers: headers, conditions: .init(expectedLastSubjectSequence: expected),
                          loop: loop) { [weak self] result in
            let outcome: WriteOutcome = switch result {
            case .success(let acknowledgement): .stored(Revision(acknowledgement.sequence))
            case .failure(let error) where error.isWrongLastSequence: .conflict
            case .failure: .failed
            }
            self?.feed(.completed(write, outcome))
        }
    }
}
