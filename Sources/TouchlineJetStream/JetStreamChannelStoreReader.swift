import Synchronization
import TouchlineCore
import TouchlineStore

/// Reads what a ``JetStreamChannelStore`` has had acknowledged: each call reads one state of the
/// tables (under their lock), from any thread. After ``close()`` every read fails with
/// ``StoreError/closed``.
public final class JetStreamChannelStoreReader: ChannelStoreReader, @unchecked Sendable {
    private let committed: JetStreamChannelStore.CommittedTables
    private var closed = false

    init(committed: JetStreamChannelStore.CommittedTables) { self.committed = committed }

    public func close() { closed = true }

    private func read<T>(_ body: (ChannelTables) -> T) throws(StoreError) -> T {
        guard !closed else { throw .closed }
        return committed.tables.withLock { body($0) }
    }

    public func channel(id: String) throws(StoreError) -> ChannelRecord? { try read { $0.channel(id: id) } }

    public func channel(apnsChannelID: String) throws(StoreError) -> ChannelRecord? {
        try read { $0.channel(apnsChannelID: apnsChannelID) }
    }

    public func channels(after afterID: String?, limit: Int) throws(StoreError) -> [ChannelRecord] {
        try read { $0.channels(after: afterID, limit: limit) }
    }

    public func channels(status: ChannelStatus) throws(StoreError) -> [ChannelRecord] { try read { $0.channels(status: status) } }

    public func events(channelID: String, afterSeq: Int64, limit: Int) throws(StoreError) -> [StoredEvent] {
        try read { $0.events(channelID: channelID, afterSeq: afterSeq, limit: limit) }
    }
}
