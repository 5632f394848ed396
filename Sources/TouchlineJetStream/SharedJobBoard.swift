import Foundation
import NATS
import Synchronization
import TouchlineCore
import TouchlineRuntime

/// The cluster's personal jobs on a key-value bucket (`<prefix>_jobs`): a job's entry
/// (``SharedJobEntry``, key `job.<id>`) and each slice's progress (``SliceEntry``, key
/// `slice.<id>.<index>`). Every gateway watches the whole bucket; what it runs is decided by
/// ``SharedJobPlan`` from that watch and its partition leases. A kickoff whose channel ended is
/// cancelled by a key of its own (`cancel.<id>`, the time it was cancelled at), so the
/// cancellation never races the job's final counts for one key. A scheduled job's start is
/// recorded by a key of its own too (`start.<id>`), and a provider's cancellation of it before
/// its time by another (`withdraw.<id>`): whichever the bucket holds first decides, on every
/// gateway alike (``SharedJobPlan/schedule(of:)``).
///
/// Writes are plain publishes, not compare-and-set: a slice is written only by the owner of its
/// partition (the lease is the fence, checked before every write and send) and a job's entry
/// only by the gateway that accepts it and then by its first slice's owner, once every slice
/// has finished (docs/cluster.md, "Personal jobs on the cluster").
///
/// Loop-confined: create it off the loop (the bucket is made with a blocking request), then use
/// it on `loop`, where its watch and every completion run.
public final class SharedJobBoard: @unchecked Sendable {
    /// What the watch delivered.
    public enum Change: Sendable {
        case job(SharedJobEntry)
        /// A slice's progress, with its revision (the bucket's stream sequence): a gateway's own
        /// later write may be known before the watch shows an earlier one.
        case slice(SharedJobPlan.SliceKey, SliceEntry, revision: UInt64)
        /// The job was cancelled at this time (its kickoff's channel ended): whatever of it is
        /// not sent by then counts as expired. The revision orders it against a recorded start.
        case cancelled(jobID: String, atNanoseconds: Int64, revision: UInt64)
        /// The scheduled job's start was recorded at this revision.
        case started(jobID: String, revision: UInt64)
        /// The provider cancelled the scheduled job at this revision: it is withdrawn unless its
        /// start came first.
        case withdrawn(jobID: String, revision: UInt64)
        /// The job's entry was deleted: it expired (``FinishedJobExpiry``), and is forgotten.
        case removed(jobID: String)
    }

    /// Largest value the bucket takes: a slice's checkpoint lists at most a fan-out window of
    /// tokens (``maximumSliceWindow``), well within it.
    public static let maximumValueSize = 512 * 1_024
    /// The fan-out window of a slice: what its checkpoint can list at most.
    public static let maximumSliceWindow = 2_000

    public let bucket: String
    private let jetStream: any JetStreamClient
    private let loop: EventLoop
    private var watch: (any MessageSubscription)?
    /// The JetStream API requests of purges, made on first use (on the loop).
    private var requests: NATSRequests?
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()

    /// The bucket of the deployment named `prefix`.
    public static func bucketName(prefix: String) -> String { "\(prefix)_jobs" }

    /// Makes the bucket if needed (blocking: from a starting thread); `maximumBytes` is its size limit.
    public static func open(jetStream: any JetStreamClient, prefix: String, replicas: Int, maximumBytes: Int? = nil,
                            loop: EventLoop) throws(NATSError) -> SharedJobBoard {
        let bucket = bucketName(prefix: prefix)
        try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureKeyValueBucket(bucket, replicas: replicas, maximumValueSize: maximumValueSize, maximumBytes: maximumBytes)
        }
        // A bucket just made is not heard by every server at once: the first job's publish
        // through one that has not heard it would get no responders (a 503 for the job).
        try JetStream.waitUntilHeard(subject: JetStream.keySubject(bucket: bucket, key: "probe"), jetStream: jetStream, loop: loop)
        return SharedJobBoard(bucket: bucket, jetStream: jetStream, loop: loop)
    }

    private init(bucket: String, jetStream: any JetStreamClient, loop: EventLoop) {
        self.bucket = bucket
        self.jetStream = jetStream
        self.loop = loop
    }

    /// Starts the watch (blocking: from a starting thread): the last value of every key, then
    /// every change, to `onChange` on the loop. An entry that cannot be read is skipped and
    /// named to `onUnreadable`. A watch asked for while the bucket's stream has no leader (a
    /// bucket just made, a cluster still forming) goes unanswered, and is asked for again.
    public func start(onChange: @escaping (Change) -> Void, onUnreadable: @escaping (String) -> Void) throws(NATSError) {
        self.onChange = onChange
        self.onUnreadable = onUnreadable
        watch = try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.subscribeOrdered(to: "$KV.\(bucket).>", from: .lastPerSubject, loop: loop) { [weak self] message in
                self?.observed(message)
            }
        }
    }

    private var onChange: (Change) -> Void = { _ in }
    private var onUnreadable: (String) -> Void = { _ in }

    private func observed(_ message: NATSMessage) {
        let key = message.subject.dropFirst("$KV.\(bucket).".count)
        guard message.headers["KV-Operation"] == nil else {
            if key.hasPrefix("job.") { onChange(.removed(jobID: String(key.dropFirst("job.".count)))) }
            return
        }
        let revision = message.stream?.sequence ?? 0
        if key.hasPrefix("job."), let entry = try? decoder.decode(SharedJobEntry.self, from: Data(message.payload)) {
            onChange(.job(entry))
        } else if key.hasPrefix("slice."), let sliceKey = Self.sliceKey(String(key.dropFirst("slice.".count))),
                  let entry = try? decoder.decode(SliceEntry.self, from: Data(message.payload)) {
            onChange(.slice(sliceKey, entry, revision: revision))
        } else if key.hasPrefix("cancel."), let at = Int64(String(decoding: message.payload, as: UTF8.self)) {
            onChange(.cancelled(jobID: String(key.dropFirst("cancel.".count)), atNanoseconds: at, revision: revision))
        } else if key.hasPrefix("start.") {
            onChange(.started(jobID: String(key.dropFirst("start.".count)), revision: revision))
        } else if key.hasPrefix("withdraw.") {
            onChange(.withdrawn(jobID: String(key.dropFirst("withdraw.".count)), revision: revision))
        } else {
            onUnreadable(String(key))
        }
    }

    public func stop() {
        watch?.cancel()
        watch = nil
    }

    /// Stores a job's entry (accepted, or finished); `completion` on the loop once the cluster
    /// has it, with whether it was stored now. The job's id is the message id of its first
    /// entry, so a publish of the same job sent again within the bucket's duplicate window is
    /// stored once (false: it was there already).
    public func publish(_ entry: SharedJobEntry, completion: @escaping @Sendable (Result<Bool, NATSError>) -> Void) {
        let payload = Array((try? encoder.encode(entry)) ?? Data())
        let id = entry.finished == nil ? entry.id : nil
        jetStream.publish(payload, to: JetStream.keySubject(bucket: bucket, key: "job.\(entry.id)"),
                          conditions: JetStream.PublishConditions(messageID: id), loop: loop) { result in
            completion(result.map { !$0.duplicate })
        }
    }

    /// Stores a changed entry of a job that has not started (a scheduled kickoff moved to
    /// another APNs channel): not held back as a repeat of the job's first entry, as
    /// ``publish(_:completion:)`` would within the duplicate window. `completion` on the loop.
    public func replace(_ entry: SharedJobEntry, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        let payload = Array((try? encoder.encode(entry)) ?? Data())
        jetStream.publish(payload, to: JetStream.keySubject(bucket: bucket, key: "job.\(entry.id)"), loop: loop) { result in
            completion(result.map { _ in () })
        }
    }

    /// Stores a slice's progress over its save of revision `previous` (0: its first), if `fence`
    /// still holds as it is sent; `completion` on the loop once the cluster has it, with the
    /// entry's revision. A save over another revision is refused (``NATSError/isWrongLastSequence``):
    /// checkpoints only move forward from the one their writer ran from.
    public func publish(_ entry: SliceEntry, for key: SharedJobPlan.SliceKey, fence: any SideEffectFence, over previous: UInt64,
                        completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        let payload = Array((try? encoder.encode(entry)) ?? Data())
        guard payload.count <= Self.maximumValueSize else {
            let error = NATSError(status: 0, operation: "save \(key)", detail: "its checkpoint is \(payload.count) bytes, over \(Self.maximumValueSize)")
            return loop.execute { completion(.failure(error)) }
        }
        guard fence.holds else {
            let error = NATSError(status: 0, operation: "save \(key)", detail: "the lease it runs under (\(fence)) no longer holds; not saved")
            return loop.execute { completion(.failure(error)) }
        }
        jetStream.publish(payload, to: JetStream.keySubject(bucket: bucket, key: "slice.\(key.jobID).\(key.slice.index).\(key.slice.count)"),
                          conditions: JetStream.PublishConditions(expectedLastSubjectSequence: previous), loop: loop) { result in
            completion(result.map(\.sequence))
        }
    }

    /// A slice's last save as the cluster holds it now, with its revision (nil: none, or
    /// removed), read past the watch: a gateway taking a slice over runs it from this, whatever
    /// its watch has delivered yet (after a pause the watch can be silent for many seconds).
    /// Blocks: never on the loop.
    public func currentSave(of key: SharedJobPlan.SliceKey) throws -> (entry: SliceEntry, revision: UInt64)? {
        let subject = JetStream.keySubject(bucket: bucket, key: "slice.\(key.jobID).\(key.slice.index).\(key.slice.count)")
        guard let last = try jetStream.lastMessage(stream: "KV_\(bucket)", subject: subject), !last.payload.isEmpty else { return nil }
        return (try decoder.decode(SliceEntry.self, from: Data(last.payload)), last.sequence)
    }

    /// Cancels a job from `atNanoseconds` on; `completion` on the loop once the cluster has it.
    public func cancel(jobID: String, atNanoseconds: Int64, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        jetStream.publish(Array(String(atNanoseconds).utf8), to: JetStream.keySubject(bucket: bucket, key: "cancel.\(jobID)"),
                          conditions: JetStream.PublishConditions(messageID: "cancel-\(jobID)"), loop: loop) { result in
            completion(result.map { _ in () })
        }
    }

    /// Records a scheduled job's start; `completion` on the loop once the cluster has it. Sent
    /// again after a lost acknowledgement, it is stored once (its message id).
    public func recordStart(jobID: String, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        jetStream.publish([], to: JetStream.keySubject(bucket: bucket, key: "start.\(jobID)"),
                          conditions: JetStream.PublishConditions(messageID: "start-\(jobID)"), loop: loop) { result in
            completion(result.map { _ in () })
        }
    }

    /// Records a provider's cancellation of a scheduled job; `completion` on the loop once the
    /// cluster has it. Whether it withdrew the job shows in the watch: it did if the bucket
    /// holds no start before it.
    public func withdraw(jobID: String, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        jetStream.publish([], to: JetStream.keySubject(bucket: bucket, key: "withdraw.\(jobID)"),
                          conditions: JetStream.PublishConditions(messageID: "withdraw-\(jobID)"), loop: loop) { result in
            completion(result.map { _ in () })
        }
    }

    /// Deletes a finished job's slice, cancellation and schedule keys (its entry, with the
    /// summed counts, stays): each becomes a deletion marker (`KV-Operation: DEL`, no value), which
    /// the bucket keeps in place of the value (it holds one message per key) and every watch
    /// skips. `completion` on the loop once the cluster has every marker, with how many went.
    ///
    /// Markers, not a purge: a watch running now and one started later then agree on what the
    /// job left; the markers are purged with the job's entry once it expires (docs/cluster.md,
    /// "Finished jobs expire").
    public func forget(jobID: String, slices: Int, scheduled: Bool, completion: @escaping @Sendable (Result<Int, NATSError>) -> Void) {
        let keys = (0..<max(slices, 0)).map { "slice.\(jobID).\($0).\(slices)" } + ["cancel.\(jobID)"]
            + (scheduled ? ["start.\(jobID)", "withdraw.\(jobID)"] : [])
        let outcome = Mutex<(waiting: Int, failure: NATSError?)>((keys.count, nil))
        for key in keys {
            jetStream.publish([], to: JetStream.keySubject(bucket: bucket, key: key), headers: ["KV-Operation": "DEL"], loop: loop) { result in
                let (finished, failure) = outcome.withLock { state -> (Bool, NATSError?) in
                    if case .failure(let error) = result, state.failure == nil { state.failure = error }
                    state.waiting -= 1
                    return (state.waiting == 0, state.failure)
                }
                guard finished else { return }
                completion(failure.map { .failure($0) } ?? .success(keys.count))
            }
        }
    }

    /// Writes a deletion marker over an expired job's entry, if `fence` (the sweeper's hold of
    /// partition 0) still holds as it is sent; `completion` on the loop once the cluster has it.
    public func remove(jobID: String, fence: any SideEffectFence, completion: @escaping @Sendable (Result<Void, NATSError>) -> Void) {
        guard fence.holds else {
            let error = NATSError(status: 0, operation: "remove job \(jobID)", detail: "the lease it was decided under (\(fence)) no longer holds")
            return loop.execute { completion(.failure(error)) }
        }
        jetStream.publish([], to: JetStream.keySubject(bucket: bucket, key: "job.\(jobID)"), headers: ["KV-Operation": "DEL"], loop: loop) { result in
            completion(result.map { _ in () })
        }
    }

    /// Purges every key of a removed job from the bucket: its entry's marker, and its slices',
    /// cancellation's and schedule's, which ``forget(jobID:slices:scheduled:completion:)``
    /// left. A filtered purge moves no consumer past other keys' messages on the servers this
    /// gateway runs on (2.11 and later). `completion` on the loop with how many messages went.
    public func purge(jobID: String, completion: @escaping @Sendable (Result<UInt64, NATSError>) -> Void) {
        guard let requests = requests ?? (try? NATSRequests(connection: jetStream.messaging, loop: loop)) else {
            let error = NATSError(status: 0, operation: "purge job \(jobID)", detail: "the connection takes no requests now")
            return loop.execute { completion(.failure(error)) }
        }
        self.requests = requests
        let stream = "KV_\(bucket)", slices = "$KV.\(bucket).slice.\(jobID).>"
        requests.purge(stream: stream, subject: "$KV.\(bucket).*.\(jobID)", timeout: .seconds(5)) { first in
            requests.purge(stream: stream, subject: slices, timeout: .seconds(5)) { second in
                completion(first.flatMap { keys in second.map { keys + $0 } })
            }
        }
    }

    /// `<job>.<index>.<count>` back into a key.
    static func sliceKey(_ text: String) -> SharedJobPlan.SliceKey? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let index = Int(parts[1]), let count = Int(parts[2]),
              let slice = AudienceSlice(index: index, count: count) else { return nil }
        return SharedJobPlan.SliceKey(jobID: String(parts[0]), slice: slice)
    }
}
