import TouchlineCore
import TouchlineStore

/// The committed contents of one in-memory store: every table of a store file, as values (the
/// channel side is ``ChannelTables``, shared with the JetStream backend).
///
/// A batch is applied to a copy and the copy replaces the tables only when every operation
/// succeeded, so a failure in the middle leaves nothing behind (the all-or-nothing rule).
struct InMemoryTables: Sendable {
    struct JobToken: Hashable, Sendable {
        var jobID: String
        var token: String
    }

    struct Target: Sendable {
        enum State: Sendable { case retry, deadLettered }
        var state: State
        var attempts: Int
        var retryAt: UnixTime?
    }

    struct IdempotencyKey: Hashable, Sendable {
        var scope: String
        var route: String
        var key: String
    }

    /// Channels, events and the webhook outbox (the channel side's rules).
    var channelTables = ChannelTables()
    /// With their follows, sorted and without repeats.
    var tokens: [String: TokenRecord] = [:]
    var jobs: [String: PersonalJobRecord] = [:]
    var targets: [JobToken: Target] = [:]
    var deadLetters: [Int64: DeadLetterRecord] = [:]
    var deadLetterIDs: [JobToken: Int64] = [:]
    /// Dead letters are never deleted, so this is also the highest id kept.
    var lastDeadLetterID: Int64 = 0
    var idempotency: [IdempotencyKey: IdempotencyRecord] = [:]
    /// The tokens (lowercased) started into each APNs channel.
    var generationStarts: [String: Set<String>] = [:]
}
