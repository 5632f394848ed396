import TouchlineCore
import TouchlineJetStream
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore

/// How a cluster gateway holds the token registry (`store.registry`): a whole copy built from
/// the one log, or the partitions it owns (docs/cluster.md, "The shared token registry", "The
/// partitioned token registry"). The rest of the gateway sees only the personal store, the
/// readers and the lookups each makes.
enum ClusterRegistry: Sendable {
    case shared(SharedTokenRegistry)
    case partitioned(PartitionedTokenStore)

    var store: any PersonalStoreWriter {
        switch self {
        case .shared(let registry): registry
        case .partitioned(let store): store
        }
    }

    var copy: any TokenRegistryCopy {
        switch self {
        case .shared(let registry): registry
        case .partitioned(let store): store
        }
    }

    /// A reader of the personal side for one thread: the gateway's file whole, or with its
    /// token reads going to the registry partitions owned here (what slices read).
    func personalReader(file personalPath: String) throws -> any PersonalStoreReader {
        let file = try SQLiteTokenReader(path: personalPath)
        guard case .partitioned(let store) = self else { return file }
        let registry = store.registry
        return OwnedPartitionsPersonalReader(tokens: OwnedPartitionsReader(partitioning: registry.partitioning, path: { registry.path(of: $0) }),
                                             file: file)
    }

    func lookups(reader: any TokenRegistryReader, loop: EventLoop) -> any TokenLookups {
        switch self {
        case .shared: ReaderTokenLookups(reader)
        case .partitioned(let store): PartitionedTokenLookups(registry: store.registry, loop: loop)
        }
    }
}

/// A partitioned registry has no copy to build: its partitions are read by their owners.
extension PartitionedTokenStore: TokenRegistryCopy {
    package var isCaughtUp: Bool { true }
    package var catchUpProgress: (applied: UInt64, target: UInt64) { (0, 0) }
}

/// Tokens looked up at their partitions' owners (here or over request-reply), answered on `loop`.
final class PartitionedTokenLookups: TokenLookups, Sendable {
    private let registry: PartitionedRegistry
    private let loop: EventLoop

    init(registry: PartitionedRegistry, loop: EventLoop) {
        self.registry = registry
        self.loop = loop
    }

    var resolvesUsersAtIntake: Bool { true }

    func token(_ token: String, answer: @escaping @Sendable (Result<TokenRecord?, StoreError>) -> Void) {
        registry.lookUp([token]) { [loop] found in loop.execute { answer(found.map(\.first)) } }
    }

    func tokens(userID: String, app: String, limit: Int, answer: @escaping @Sendable (Result<[TokenRecord], StoreError>) -> Void) {
        registry.tokens(userID: userID, app: app, limit: limit) { [loop] found in loop.execute { answer(found) } }
    }
}

/// The personal side as a slice on a partitioned registry reads it: tokens from the registry
/// partitions owned here (``OwnedPartitionsReader``), jobs, dead letters and idempotency
/// records from the gateway's own file. Confined to one thread, like both readers.
final class OwnedPartitionsPersonalReader: TokenRegistryReader, PersonalJobReader {
    private let tokens: OwnedPartitionsReader
    private let file: SQLiteTokenReader

    init(tokens: OwnedPartitionsReader, file: SQLiteTokenReader) {
        self.tokens = tokens
        self.file = file
    }

    func token(_ token: String) throws(StoreError) -> TokenRecord? { try tokens.token(token) }
    func tokens(userID: String, app: String, limit: Int) throws(StoreError) -> [TokenRecord] {
        try tokens.tokens(userID: userID, app: app, limit: limit)
    }
    func tokens(after cursor: String?, limit: Int) throws(StoreError) -> [TokenRecord] { try tokens.tokens(after: cursor, limit: limit) }
    func pushToStartTokens(following follow: String, app: String, after cursor: String?, limit: Int,
                           environment: TokenEnvironment?) throws(StoreError) -> [TokenTarget] {
        try tokens.pushToStartTokens(following: follow, app: app, after: cursor, limit: limit, environment: environment)
    }
    func activeTokens(among list: [String], app: String, environment: TokenEnvironment?) throws(StoreError) -> [String] {
        try tokens.activeTokens(among: list, app: app, environment: environment)
    }

    func job(id: String) throws(StoreError) -> PersonalJobRecord? { try file.job(id: id) }
    func jobSummary(id: String) throws(StoreError) -> PersonalJobSummary? { try file.jobSummary(id: id) }
    func jobs(status: PersonalJobStatus, limit: Int) throws(StoreError) -> [PersonalJobRecord] { try file.jobs(status: status, limit: limit) }
    func retriesDue(jobID: String, at time: UnixTime, limit: Int) throws(StoreError) -> [PersonalJobRetry] {
        try file.retriesDue(jobID: jobID, at: time, limit: limit)
    }
    func deadLetters(status: DeadLetterStatus?, jobID: String?, reason: String?, after afterID: Int64,
                     limit: Int) throws(StoreError) -> [DeadLetterRecord] {
        try file.deadLetters(status: status, jobID: jobID, reason: reason, after: afterID, limit: limit)
    }
    func deadLetters(ids: [Int64]) throws(StoreError) -> [DeadLetterRecord] { try file.deadLetters(ids: ids) }
    func deadLetters(selectedBy selection: DeadLetterSelection) throws(StoreError) -> [DeadLetterRecord] {
        try file.deadLetters(selectedBy: selection)
    }
    func startedTokens(among list: [String], into channel: String) throws(StoreError) -> Set<String> {
        try file.startedTokens(among: list, into: channel)
    }
    func hasStarts(into channel: String) throws(StoreError) -> Bool { try file.hasStarts(into: channel) }
    func idempotencyRecord(scope: String, route: String, key: String, at now: UnixTime) throws(StoreError) -> IdempotencyRecord? {
        try file.idempotencyRecord(scope: scope, route: route, key: key, at: now)
    }
    func idempotencyRecordCount() throws(StoreError) -> Int { try file.idempotencyRecordCount() }

    func close() {
        tokens.close()
        file.close()
    }
}
