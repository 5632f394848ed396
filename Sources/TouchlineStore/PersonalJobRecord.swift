import Foundation
import TouchlineCore

/// Where a personal job is. Stored as its raw text.
public enum PersonalJobStatus: String, Sendable, CaseIterable {
    /// Durable, not yet picked up by the personal queue.
    case pending
    /// Fanning out (or waiting for retries); resumes from its cursor after a restart.
    case running
    /// Every target ended sent, dead-lettered or expired (or, for a job with a `startAt`
    /// finished before that time, cancelled: ``PersonalJobRecord/wasCancelled``).
    case done
}

/// A job's progress counts, as shown by `GET /v1/personal/{job}`.
///
/// The queue keeps them in memory and writes them whole with each ``PersonalJobProgress``, so a
/// write is idempotent and the sum `sent + failed + expired + pending == targeted` holds in every
/// committed state.
public struct PersonalJobCounts: Sendable, Equatable {
    public var targeted: Int64
    public var sent: Int64
    /// Permanent failures by APNs reason (e.g. "BadDeviceToken": 3).
    public var failed: [String: Int64]
    public var expired: Int64
    public var pending: Int64

    public init(targeted: Int64 = 0, sent: Int64 = 0, failed: [String: Int64] = [:], expired: Int64 = 0, pending: Int64 = 0) {
        self.targeted = targeted
        self.sent = sent
        self.failed = failed
        self.expired = expired
        self.pending = pending
    }

    /// `failed` as JSON text with sorted keys (deterministic, so equal counts store equal text).
    var failedJSON: String {
        let data = (try? Self.encoder.encode(failed)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func failed(fromJSON text: String) -> [String: Int64]? {
        try? JSONDecoder().decode([String: Int64].self, from: Data(text.utf8))
    }

    /// Tokens as stored: one per line. Tokens are hex, so a line break never occurs in one, and a
    /// save may carry a thousand of them: joining costs a fraction of a JSON encoding, and so does
    /// reading them back on every `GET /v1/personal/{job}`.
    static func tokensText(_ tokens: [String]) -> String {
        tokens.joined(separator: "\n")
    }

    /// Reads ``tokensText(_:)``, and the JSON array the store wrote before (schema 3's default `[]`).
    static func tokens(fromText text: String) -> [String]? {
        if text.hasPrefix("[") { return try? JSONDecoder().decode([String].self, from: Data(text.utf8)) }
        return text.split(separator: "\n").map(String.init)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
}

/// What `GET /v1/personal/{job}` shows of a stored job, read without its payload and without
/// the tokens ended after its cursor (thousands during a large fan-out, and clients poll).
public struct PersonalJobSummary: Sendable, Equatable {
    public var app: String
    public var status: PersonalJobStatus
    public var counts: PersonalJobCounts
    public var startAt: UnixTime?
    public var updatedAt: UnixTime

    /// As ``PersonalJobRecord/wasCancelled``.
    public var wasCancelled: Bool { status == .done && startAt.map { updatedAt < $0 } == true }

    public init(app: String, status: PersonalJobStatus, counts: PersonalJobCounts, startAt: UnixTime?, updatedAt: UnixTime) {
        self.app = app
        self.status = status
        self.counts = counts
        self.startAt = startAt
        self.updatedAt = updatedAt
    }

    public init(_ job: PersonalJobRecord) {
        self.init(app: job.app, status: job.status, counts: job.counts, startAt: job.startAt, updatedAt: job.updatedAt)
    }
}

/// A durable personal push: its audience, its payload (encoded once, reused for every token) and
/// how far its fan-out got.
public struct PersonalJobRecord: Sendable, Equatable {
    public var id: String
    public var createdAt: UnixTime
    /// The request's audience (`{"follows":"team:ARS"}`, ...) as JSON text; the queue interprets it.
    public var audience: String
    /// The `aps` payload bytes, exactly as they go on the wire.
    public var payload: [UInt8]
    /// `apns-priority` (5 or 10).
    public var priority: Int
    /// `apns-expiration`: after this the job's unsent targets count as expired, never sent late.
    public var expiration: UnixTime?
    public var status: PersonalJobStatus
    /// The audience token up to which every target has ended or awaits a retry; the fan-out
    /// resumes after it. Nil before the first.
    public var cursor: String?
    /// Tokens after `cursor` whose send already ended: skipped when the fan-out resumes.
    public var endedAfterCursor: [String]
    public var counts: PersonalJobCounts
    public var updatedAt: UnixTime
    /// The job waits until then (a scheduled kickoff); nil starts it at once.
    public var startAt: UnixTime?
    /// The app whose tokens it reaches, through that app's APNs connections (``AppChannelID``).
    public var app: String

    /// A scheduled job finished before its time: it can only have been cancelled (a job that
    /// started cannot finish before it started), so no status of its own is stored.
    public var wasCancelled: Bool { PersonalJobSummary(self).wasCancelled }
    /// Why the stored row could not be read in full (the other members are then stand-ins).
    /// Never written.
    public var unreadable: String?

    public init(id: String, createdAt: UnixTime, audience: String, payload: [UInt8], priority: Int = 10,
                expiration: UnixTime? = nil, status: PersonalJobStatus = .pending, cursor: String? = nil,
                endedAfterCursor: [String] = [], counts: PersonalJobCounts = PersonalJobCounts(), updatedAt: UnixTime? = nil,
                startAt: UnixTime? = nil, app: String = AppChannelID.defaultApp) {
        self.app = app
        self.startAt = startAt
        self.id = id
        self.createdAt = createdAt
        self.audience = audience
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.status = status
        self.cursor = cursor
        self.endedAfterCursor = endedAfterCursor
        self.counts = counts
        self.updatedAt = updatedAt ?? createdAt
    }
}

/// A job's new position: written in the same batch as the target outcomes it accounts for, so
/// after a crash the cursor and counters never disagree with the retry and dead-letter rows.
public struct PersonalJobProgress: Sendable, Equatable {
    public var jobID: String
    /// The new resume position (see ``PersonalJobRecord/cursor``); nil leaves the stored one.
    public var cursor: String?
    /// Replaces ``PersonalJobRecord/endedAfterCursor``.
    public var endedAfterCursor: [String]
    public var counts: PersonalJobCounts
    /// A new status (`.running` on the first batch); nil leaves it.
    public var status: PersonalJobStatus?
    public var at: UnixTime

    public init(jobID: String, cursor: String?, endedAfterCursor: [String] = [], counts: PersonalJobCounts,
                status: PersonalJobStatus? = nil, at: UnixTime) {
        self.jobID = jobID
        self.cursor = cursor
        self.endedAfterCursor = endedAfterCursor
        self.counts = counts
        self.status = status
        self.at = at
    }
}

/// A target that is waiting for another attempt (after a 429, 500, 503 or a lost connection).
public struct PersonalJobRetry: Sendable, Equatable {
    public var jobID: String
    public var token: String
    public var attempts: Int
    public var retryAt: UnixTime

    public init(jobID: String, token: String, attempts: Int, retryAt: UnixTime) {
        self.jobID = jobID
        self.token = token
        self.attempts = attempts
        self.retryAt = retryAt
    }
}
