import Synchronization

/// The committed tables of an in-memory store, shared by its writer, its readers and the writer
/// that reopens it after a close (``InMemoryStore/reopened()``): what a restart finds.
final class InMemoryCommitted: Sendable {
    let tables = Mutex(InMemoryTables())
}
