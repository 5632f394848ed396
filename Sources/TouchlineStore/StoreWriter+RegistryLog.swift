import CSQLite
import Synchronization
import TouchlineRuntime

/// Where this file's token registry stands in a shared registry log (the JetStream backend's):
/// a gateway applies the log's entries to its own file in log order, each with the sequence it
/// brings the file to, in one transaction, so a restart resumes after the last one applied.
extension StoreWriter {
    /// Why an entry was not applied: the file is not where the entry follows on.
    public static let registryLogGap = "registry log gap"

    /// Applies `entry`, logged at `sequence` right after the one at `previous` (0: the log's
    /// first), and records `sequence` with it. An entry at or below the recorded sequence was
    /// applied already and changes nothing (a consumer delivering it again after a reconnect);
    /// one whose `previous` is not the recorded sequence is refused (an entry would be missed),
    /// naming both. The summary says what the entry changed, as ``submit(summarizing:completion:)``'s.
    /// `rules`: the whole registry's, or one partition's of a partitioned one.
    public func applyRegistryEntry(_ entry: RegistryEntry, sequence: UInt64, previous: UInt64, rules: RegistryRules = .whole,
                                   completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        applyRegistryEntries([LoggedRegistryEntry(entry: entry, sequence: sequence, previous: previous)], rules: rules, completion: completion)
    }

    /// Applies consecutive log `entries` in one job, as ``applyRegistryEntry(_:sequence:previous:rules:completion:)``
    /// applies each, recording the last one's sequence once: what a takeover reading a log's
    /// tail does, in transactions of many entries rather than one each (each entry's rows and
    /// the sequence's row written once per transaction, not once per entry). A gap refuses the
    /// whole job. The summary counts the tokens all of them deactivated.
    public func applyRegistryEntries(_ entries: [LoggedRegistryEntry], rules: RegistryRules = .whole,
                                     completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        let deactivated = Mutex(0)
        enqueue(Job(apply: { db in
            var recorded = try Self.registryLogSequence(on: db)
            let applied = recorded
            var count = 0
            for logged in entries where logged.sequence > recorded {
                guard logged.previous == recorded else {
                    throw SQLiteError(code: SQLITE_CONSTRAINT,
                                      message: "\(Self.registryLogGap): entry \(logged.sequence) follows \(logged.previous), this file holds up to \(recorded)",
                                      statement: nil)
                }
                for operation in logged.entry.operations { count += try TokenRows.apply(operation, rules: rules, on: db) }
                recorded = logged.sequence
            }
            if recorded > applied { try Self.recordRegistryLogSequence(recorded, on: db) }
            deactivated.withLock { $0 = count }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(TokenWriteSummary(tokensDeactivated: deactivated.withLock { $0 })))
        }))
    }

    /// Whether `operations` would commit now, by the file's rules (a duplicate job id, an unknown
    /// job, a key still held): applied behind the writes queued before, then rolled back. A store
    /// that logs part of a list elsewhere checks the rest first, so a list the rules refuse is
    /// refused before anything of it is logged.
    public func check(_ operations: [TokenOperation], completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        var job = Job(apply: { db in
            for operation in operations { try TokenRows.apply(operation, on: db) }
        }, complete: { error in completion(error.map { .failure($0) } ?? .success(())) })
        job.checkOnly = true
        enqueue(job)
    }

    /// Makes this file one partition of a partitioned registry: drops the index of tokens by
    /// user, which only the whole registry's rule and its user lookups read (a partition's
    /// users are its directory's), about 60 bytes a token. Behind the writes queued before.
    public func keepAsRegistryPartition(completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        enqueue(Job(apply: { db in try db.run("DROP INDEX IF EXISTS tokens_by_user") },
                    complete: { error in completion(error.map { .failure($0) } ?? .success(())) }))
    }

    /// Up to `limit` replacements of users' tokens this partition's directory decided and has not
    /// logged yet (``UserDirectoryRows``), behind the writes queued before.
    public func pendingSupersessions(limit: Int, completion: @escaping @Sendable (Result<[TokenOperation], StoreError>) -> Void) {
        let pending = Mutex<[TokenOperation]>([])
        enqueue(Job(apply: { db in
            let read = try UserDirectoryRows.pendingSupersessions(limit: limit, on: db)
            pending.withLock { $0 = read }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(pending.withLock { $0 }))
        }))
    }

    /// Forgets replacements read by ``pendingSupersessions(limit:completion:)`` once they are logged.
    public func forgetSupersessions(_ logged: [TokenOperation], completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        enqueue(Job(apply: { db in try UserDirectoryRows.forget(logged, on: db) },
                    complete: { error in completion(error.map { .failure($0) } ?? .success(())) }))
    }

    /// The sequence of the last registry log entry this file applied (0: none), read on the
    /// writer's thread behind the writes queued before.
    public func registryLogSequence(completion: @escaping @Sendable (Result<UInt64, StoreError>) -> Void) {
        let sequence = Mutex<UInt64>(0)
        enqueue(Job(apply: { db in
            let recorded = try Self.registryLogSequence(on: db)
            sequence.withLock { $0 = recorded }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(sequence.withLock { $0 }))
        }))
    }

    static func registryLogSequence(on db: SQLiteConnection) throws -> UInt64 {
        let stored = try db.query("SELECT sequence FROM registry_log WHERE id = 1") { $0.int64(at: 0) }.first ?? 0
        return UInt64(max(stored, 0))
    }

    static func recordRegistryLogSequence(_ sequence: UInt64, on db: SQLiteConnection) throws {
        try db.run("INSERT INTO registry_log (id, sequence) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET sequence = excluded.sequence",
                   [.integer(Int64(sequence))])
    }
}

/// A registry log entry with its place in the log: its sequence, and the sequence of the entry
/// before it (0: the log's first).
public struct LoggedRegistryEntry: Sendable {
    public let entry: RegistryEntry
    public let sequence: UInt64
    public let previous: UInt64

    public init(entry: RegistryEntry, sequence: UInt64, previous: UInt64) {
        self.entry = entry
        self.sequence = sequence
        self.previous = previous
    }
}
