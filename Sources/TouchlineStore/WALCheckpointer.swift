import Foundation
import TouchlineRuntime

/// Copies the write-ahead log back into the database from a thread of its own.
///
/// SQLite's automatic checkpoint runs inside the committing connection: every few hundred pages
/// one group commit also writes the log back and fsyncs the database, and every batch queued
/// behind it waits (measured: 5-8 ms stalls twice a second at 2,000 events/s, which made the
/// ingest-to-APNs p99 latency). The writer therefore turns automatic checkpoints off and this
/// thread runs passive checkpoints on its own connection: they never block the writer or
/// readers, and the log restarts from the beginning once everything in it was copied back.
final class WALCheckpointer: @unchecked Sendable {
    private let connection: SQLiteConnection
    private let interval: Duration
    private let stopRequested = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Opens a second connection to `path` and starts checkpointing every `interval`, at CPU
    /// priority `niceness`.
    init(path: String, synchronous: SQLiteSynchronous, niceness: Int32 = 0, interval: Duration = .milliseconds(250)) throws {
        connection = try SQLiteConnection(path: path, synchronous: synchronous)
        self.interval = interval
        let thread = Thread { [self] in
            nameCurrentThread("wal-checkpoint")
            if niceness > 0 { _ = lowerCurrentThreadPriority(niceness: niceness) }
            run()
        }
        thread.start()
    }

    /// Stops the thread after its current checkpoint and closes its connection.
    func stop() {
        stopRequested.signal()
        finished.wait()
    }

    private func run() {
        let nanoseconds = Int(interval.inNanoseconds)
        while stopRequested.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut {
            // A busy or failed checkpoint is simply tried again next time; the log only grows meanwhile.
            try? connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        }
        connection.close()
        finished.signal()
    }
}
