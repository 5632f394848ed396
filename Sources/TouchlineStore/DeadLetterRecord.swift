import TouchlineCore

/// Whether a dead letter still waits for an operator. Stored as its raw text.
public enum DeadLetterStatus: String, Sendable, CaseIterable {
    case dead
    /// Handed to a replay; kept for the record.
    case replayed
}

/// A target that failed permanently, with APNs' reason (`GET /v1/deadletters`).
public struct DeadLetterRecord: Sendable, Equatable {
    /// Assigned by the store (ascending); the paging key. Ignored on insert.
    public var id: Int64
    public var jobID: String
    public var token: String
    public var reason: String
    public var status: DeadLetterStatus
    public var at: UnixTime

    public init(id: Int64 = 0, jobID: String, token: String, reason: String, status: DeadLetterStatus = .dead, at: UnixTime) {
        self.id = id
        self.jobID = jobID
        self.token = token
        self.reason = reason
        self.status = status
        self.at = at
    }
}

/// Which dead letters a replay takes (`POST /v1/deadletters/replay`): those still `.dead`,
/// optionally of one job and one reason, oldest first.
public struct DeadLetterSelection: Sendable, Equatable {
    public var jobID: String?
    public var reason: String?
    public var limit: Int

    public init(jobID: String? = nil, reason: String? = nil, limit: Int) {
        self.jobID = jobID
        self.reason = reason
        self.limit = limit
    }
}
