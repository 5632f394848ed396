import Foundation
import TouchlineCore

/// A personal job as the cluster's job bucket holds it (key `job.<id>`): written once when the
/// job is accepted, and once more with its final counts.
///
/// Everything a gateway needs to run any slice of it is here, so no gateway depends on the
/// one that accepted it.
public struct SharedJobEntry: Codable, Sendable, Equatable {
    public var id: String
    public var createdAtNanoseconds: Int64
    /// The audience as stored with a job (`PersonalAudience`'s JSON text).
    public var audience: String
    /// The encoded Live Activity payload, sent as is to every token.
    public var payload: Data
    public var priority: Int
    public var expirationNanoseconds: Int64?
    /// Slices it is cut in (``AudienceSlice``).
    public var slices: Int
    /// The registry log position of the accepting gateway's copy when it accepted the job: a
    /// slice reads its audience from a copy at least this far, so a fan registered through that
    /// gateway before the job is in it wherever the slice runs.
    public var registrySequence: UInt64
    /// The request's `Idempotency-Key` record, when it had one: a job created for such a request
    /// has an id derived from the key, so a repeat sent to any gateway finds this entry and gets
    /// the first answer again (docs/cluster.md, "Idempotency keys on the cluster").
    public var idempotency: IdempotentAnswer?
    /// When a scheduled job (a kickoff with `at`) starts; nil: at once. No slice of it runs
    /// before its start is recorded (``SharedJobBoard/recordStart(jobID:completion:)``).
    public var startAtNanoseconds: Int64?
    /// The sum of the slices' counts, once every slice has finished.
    public var finished: FanOutCounters?
    public var finishedAtNanoseconds: Int64?
    /// Closed without sending anything: a cancellation was recorded before its start.
    public var withdrawn: Bool?
    /// The app whose tokens it reaches (nil: `default`, and every entry written before apps).
    public var app: String?
    /// Cut on the partitions of a partitioned registry, each slice run by its partition's owner
    /// (nil: spread from the job's partition, as every entry written before it).
    public var slicesFollowRegistry: Bool?

    public init(id: String, createdAtNanoseconds: Int64, audience: String, payload: Data, priority: Int, expirationNanoseconds: Int64?,
                slices: Int, registrySequence: UInt64) {
        self.id = id
        self.createdAtNanoseconds = createdAtNanoseconds
        self.audience = audience
        self.payload = payload
        self.priority = priority
        self.expirationNanoseconds = expirationNanoseconds
        self.slices = slices
        self.registrySequence = registrySequence
    }
}

/// What an idempotent request was and what it was answered, kept with the first job it created.
public struct IdempotentAnswer: Codable, Sendable, Equatable {
    /// SHA-256 of the request (method, target, body), in hex: a repeat must match it.
    public var requestHash: String
    public var status: Int
    /// The answer's body (JSON text).
    public var response: String

    public init(requestHash: String, status: Int, response: String) {
        self.requestHash = requestHash
        self.status = status
        self.response = response
    }
}

/// One slice's saved progress (key `slice.<job>.<index>`): its whole checkpoint, written by the
/// gateway running it at every save, so the next owner of its partition resumes from it.
public struct SliceEntry: Codable, Sendable, Equatable {
    public var checkpoint: FanOutCheckpoint
    public var isFinished: Bool
    /// The gateway that wrote it (diagnostics).
    public var instance: String

    public init(checkpoint: FanOutCheckpoint, isFinished: Bool, instance: String) {
        self.checkpoint = checkpoint
        self.isFinished = isFinished
        self.instance = instance
    }
}
