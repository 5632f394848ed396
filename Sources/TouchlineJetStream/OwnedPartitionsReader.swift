import TouchlineCore
import TouchlineStore

/// The token registry as the partitions a gateway owns hold it, read on the thread that uses
/// it (a personal queue's loop running kickoff slices): each read goes to the file of the
/// partition holding the tokens it asks for (docs/cluster.md, "The partitioned token registry").
///
/// A slice cut on the registry's bounds walks one partition, whose owner runs it, so every
/// page of its audience is read from a file of this gateway; a page never crosses a partition's
/// bound, so only such slices are read here. A read that reaches a partition
/// this gateway does not own (it moved while the slice ran, or the read concerns a user or a
/// token listed elsewhere) fails, naming the partition: the slice stops there and its next
/// owner runs it on. Lookups by user are the user's partition's and others' together: they are
/// gathered over request-reply (``PartitionedRegistry/tokens(userID:app:limit:completion:)``),
/// never here.
///
/// Thread confinement: like ``SQLiteTokenReader``, one per thread; each partition's reader is
/// opened on first use, and closed once its partition is no longer owned.
public final class OwnedPartitionsReader: TokenRegistryReader, @unchecked Sendable {
    private let partitioning: TokenPartitioning
    /// The file of a partition owned now, or nil; any thread.
    private let path: @Sendable (Int) -> String?
    private var readers: [Int: (path: String, reader: SQLiteTokenReader)] = [:]

    public init(partitioning: TokenPartitioning, path: @escaping @Sendable (Int) -> String?) {
        self.partitioning = partitioning
        self.path = path
    }

    /// `partition`'s reader, opened on first use; fails when the partition is not owned here.
    private func reader(of partition: Int) throws(StoreError) -> SQLiteTokenReader {
        guard let owned = path(partition) else {
            if let stale = readers.removeValue(forKey: partition) { stale.reader.close() }
            throw .storageFailure("registry partition \(partition) is not this gateway's: its tokens are read by its owner")
        }
        if let open = readers[partition], open.path == owned { return open.reader }
        readers.removeValue(forKey: partition)?.reader.close()
        let reader = try SQLiteTokenReader(path: owned)
        readers[partition] = (owned, reader)
        return reader
    }

    public func token(_ token: String) throws(StoreError) -> TokenRecord? {
        try reader(of: partitioning.partition(ofToken: token)).token(token)
    }

    /// Not readable from one gateway's partitions: the user's partition lists the tokens, and
    /// theirs hold them.
    public func tokens(userID: String, app: String, limit: Int) throws(StoreError) -> [TokenRecord] {
        throw .refused("a user's tokens are gathered from their partitions' owners, not read from one gateway's files")
    }

    /// A page of the partition holding the tokens right after `cursor`: pages never cross a
    /// partition's bound (a short page is that partition's end).
    public func tokens(after cursor: String?, limit: Int) throws(StoreError) -> [TokenRecord] {
        try reader(of: partition(after: cursor)).tokens(after: cursor, limit: limit)
    }

    /// A page of the partition holding the tokens right after `cursor`, which never crosses its
    /// bound: a short page ends the partition, which is the end of a slice cut on the
    /// registry's bounds (the only ones read here).
    public func pushToStartTokens(following follow: String, app: String, after cursor: String?, limit: Int,
                                  environment: TokenEnvironment?) throws(StoreError) -> [TokenTarget] {
        try reader(of: partition(after: cursor)).pushToStartTokens(following: follow, app: app, after: cursor, limit: limit, environment: environment)
    }

    public func activeTokens(among tokens: [String], app: String, environment: TokenEnvironment?) throws(StoreError) -> [String] {
        var active: [String] = []
        for (partition, inPartition) in Dictionary(grouping: tokens, by: partitioning.partition(ofToken:)) {
            active += try reader(of: partition).activeTokens(among: inPartition, app: app, environment: environment)
        }
        return active.sorted()
    }

    public func close() {
        readers.values.forEach { $0.reader.close() }
        readers = [:]
    }

    /// The partition whose tokens follow `cursor` (a slice's start cursor, or a token of it).
    private func partition(after cursor: String?) -> Int {
        cursor.map { partitioning.partition(ofToken: $0) } ?? 0
    }
}
