import TouchlineCore
import TouchlineStore

/// Reads an ``InMemoryStore``'s committed tables: channels and events, the token registry,
/// personal jobs and dead letters, idempotency records and the webhook outbox, with the orders
/// and bounds the reader protocols document. Each call reads one committed state (under the
/// store's lock). After ``close()`` every read fails with ``StoreError/closed``.
public final class InMemoryStoreReader: ChannelTablesReader, PersonalJobReader, TokenRegistryReader, WebhookOutboxReader,
    @unchecked Sendable {
    private let store: InMemoryStore
    private var closed = false

    init(store: InMemoryStore) { self.store = store }

    public func close() { closed = true }

    private func read<T>(_ body: (InMemoryTables) -> T) throws(StoreError) -> T {
        guard !closed else { throw .closed }
        return store.committed.tables.withLock { body($0) }
    }

    private static let precedes = ChannelTables.precedes

    // MARK: Channels

    public func readTables<T>(_ body: (ChannelTables) -> T) throws(StoreError) -> T { try read { body($0.channelTables) } }

    // MARK: Tokens

    public func token(_ token: String) throws(StoreError) -> TokenRecord? { try read { $0.tokens[token.lowercased()] } }

    public func tokens(userID: String, app: String, limit: Int) throws(StoreError) -> [TokenRecord] {
        try read { tables in
            Array(tables.tokens.values.filter { $0.userID == userID && $0.app == app }.sorted {
                $0.registeredAt != $1.registeredAt ? $0.registeredAt > $1.registeredAt : Self.precedes($0.token, $1.token)
            }.prefix(max(0, limit)))
        }
    }

    public func tokens(after cursor: String?, limit: Int) throws(StoreError) -> [TokenRecord] {
        try read { tables in
            Array(tables.tokens.values.filter { Self.precedes(cursor ?? "", $0.token) }.sorted { Self.precedes($0.token, $1.token) }
                .prefix(max(0, limit)))
        }
    }

    public func pushToStartTokens(following follow: String, app: String, after cursor: String?, limit: Int,
                                  environment: TokenEnvironment?) throws(StoreError) -> [TokenTarget] {
        try read { tables in
            tables.tokens.values.filter {
                $0.kind == .pushToStart && $0.active && $0.app == app && (environment == nil || $0.environment == environment)
                    && Self.precedes(cursor ?? "", $0.token) && $0.follows.contains(follow)
            }.sorted { Self.precedes($0.token, $1.token) }.prefix(max(0, limit)).map { TokenTarget(token: $0.token, environment: $0.environment) }
        }
    }

    public func activeTokens(among tokens: [String], app: String, environment: TokenEnvironment?) throws(StoreError) -> [String] {
        try read { tables in
            Set(tokens.map { $0.lowercased() }).filter { token in
                tables.tokens[token].map { $0.active && $0.app == app && (environment == nil || $0.environment == environment) } ?? false
            }.sorted(by: Self.precedes)
        }
    }

    // MARK: Jobs

    public func startedTokens(among tokens: [String], into channel: String) throws(StoreError) -> Set<String> {
        try read { tables in
            let started = tables.generationStarts[channel] ?? []
            return Set(tokens.filter { started.contains($0.lowercased()) })
        }
    }

    public func hasStarts(into channel: String) throws(StoreError) -> Bool {
        try read { !($0.generationStarts[channel] ?? []).isEmpty }
    }

    public func job(id: String) throws(StoreError) -> PersonalJobRecord? { try read { $0.jobs[id] } }

    public func jobSummary(id: String) throws(StoreError) -> PersonalJobSummary? {
        try read { $0.jobs[id].map(PersonalJobSummary.init) }
    }

    public func jobs(status: PersonalJobStatus, limit: Int) throws(StoreError) -> [PersonalJobRecord] {
        Array(try allJobs().filter { $0.status == status }.prefix(max(0, limit)))
    }

    /// Every job, in any status, oldest first, from one committed state: a test that reads
    /// status by status while the queue runs could see a job twice or not at all.
    public func allJobs() throws(StoreError) -> [PersonalJobRecord] {
        try read { tables in
            tables.jobs.values.sorted { $0.createdAt != $1.createdAt ? $0.createdAt < $1.createdAt : Self.precedes($0.id, $1.id) }
        }
    }

    public func retriesDue(jobID: String, at time: UnixTime, limit: Int) throws(StoreError) -> [PersonalJobRetry] {
        try read { tables in
            tables.targets.compactMap { key, target -> PersonalJobRetry? in
                guard key.jobID == jobID, target.state == .retry, let retryAt = target.retryAt, retryAt <= time else { return nil }
                return PersonalJobRetry(jobID: jobID, token: key.token, attempts: target.attempts, retryAt: retryAt)
            }.sorted { $0.retryAt != $1.retryAt ? $0.retryAt < $1.retryAt : Self.precedes($0.token, $1.token) }.prefix(max(0, limit)).map { $0 }
        }
    }

    public func deadLetters(status: DeadLetterStatus? = nil, jobID: String? = nil, reason: String? = nil, after afterID: Int64,
                            limit: Int) throws(StoreError) -> [DeadLetterRecord] {
        try read { tables in
            Array(tables.deadLetters.values.filter {
                $0.id > afterID && (status == nil || $0.status == status) && (jobID == nil || $0.jobID == jobID)
                    && (reason == nil || $0.reason == reason)
            }.sorted { $0.id < $1.id }.prefix(max(0, limit)))
        }
    }

    public func deadLetters(ids: [Int64]) throws(StoreError) -> [DeadLetterRecord] {
        try read { tables in Set(ids).compactMap { tables.deadLetters[$0] }.sorted { $0.id < $1.id } }
    }

    public func deadLetters(selectedBy selection: DeadLetterSelection) throws(StoreError) -> [DeadLetterRecord] {
        try deadLetters(status: .dead, jobID: selection.jobID, reason: selection.reason, after: 0, limit: selection.limit)
    }

    public func idempotencyRecord(scope: String, route: String, key: String, at now: UnixTime) throws(StoreError) -> IdempotencyRecord? {
        try read { tables in
            tables.idempotency[.init(scope: scope, route: route, key: key)].flatMap { $0.expiresAt > now ? $0 : nil }
        }
    }

    public func idempotencyRecordCount() throws(StoreError) -> Int { try read { $0.idempotency.count } }
}
