import Synchronization
import TouchlineStore

/// Reads what a ``JetStreamChannelStore`` has had acknowledged (channels, event logs, the
/// webhook outbox): each call reads one state of the tables (under their lock), from any thread. After ``close()`` every read fails with
/// ``StoreError/closed``.
public final class JetStreamChannelStoreReader: ChannelTablesReader, WebhookOutboxReader, @unchecked Sendable {
    private let committed: JetStreamChannelStore.CommittedTables
    private var closed = false

    init(committed: JetStreamChannelStore.CommittedTables) { self.committed = committed }

    public func close() { closed = true }

    public func readTables<T>(_ body: (ChannelTables) -> T) throws(StoreError) -> T {
        guard !closed else { throw .closed }
        return committed.tables.withLock { body($0) }
    }
}
