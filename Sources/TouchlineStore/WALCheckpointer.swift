import Foundation
import Synchronization
import TouchlineRuntime

/// Copies the write-ahead log back into the database from a thread of its own.
///
/// SQLite's automatic checkpoint runs inside the committing connection: every few hundred pages
/// one group commit also writes the log back and fsyncs the database, and every batch queued
/// behind it waits (measured: 5-8 ms stalls twice a second at 2,000 events/s, which made the
/// ingest-to-APNs p99 latency). The writer therefore turns automatic checkpoints off and this
/// thread runs passive checkpoints on its own connection: they never block the writer or
/// readers, and the log restarts from the beginning once everything in it was copied back.
///
/// A writer that never pauses keeps that from happening: each passive checkpoint copies what
/// was in the log when it began, the writer has appended more by the time it ends, and the log
/// is only restarted by a transaction that begins once it was all copied back. Registering
/// random tokens back to back (every list dirties pages all over the indexes) grew one file's
/// log past 14 GB for a million tokens. So when a checkpoint finds the log larger than
/// `oversizedBytes`, it tells the writer (``takeOversized()``), which checkpoints between two of
/// its own transactions, where nothing is appended meanwhile; the writer's
/// `journal_size_limit` then truncates the file back to that size when the log restarts.
final class WALCheckpointer: @unchecked Sendable {
    private let connection: SQLiteConnection
    private let interval: Duration
    private let oversizedFrames: Int64
    private let oversized = Atomic<Bool>(false)
    private let stopRequested = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Opens a second connection to `path` and starts checkpointing every `interval`, at CPU
    /// priority `niceness`.
    init(path: String, synchronous: SQLiteSynchronous, niceness: Int32 = 0, interval: Duration = .milliseconds(250),
         oversizedBytes: Int) throws {
        connection = try SQLiteConnection(path: path, synchronous: synchronous)
        let pageSize = try connection.query("PRAGMA page_size") { $0.int64(at: 0) }.first ?? 4_096
        // A frame is a page and its 24-byte header.
        oversizedFrames = Int64(oversizedBytes) / (max(pageSize, 512) + 24)
        self.interval = interval
        let thread = Thread { [self] in
            nameCurrentThread("wal-checkpoint")
            if niceness > 0 { _ = lowerCurrentThreadPriority(niceness: niceness) }
            run()
        }
        thread.start()
    }

    /// True once after a checkpoint found the log larger than `oversizedBytes`: the writer's cue
    /// to checkpoint between two of its transactions.
    func takeOversized() -> Bool { oversized.exchange(false, ordering: .relaxed) }

    /// Stops the thread after its current checkpoint and closes its connection.
    func stop() {
        stopRequested.signal()
        finished.wait()
    }

    private func run() {
        let nanoseconds = Int(interval.inNanoseconds)
        while stopRequested.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut {
            // A busy or failed checkpoint is simply tried again next time; the log only grows meanwhile.
            let frames = try? connection.query("PRAGMA wal_checkpoint(PASSIVE)") { $0.int64(at: 1) }.first
            if let frames, frames >= oversizedFrames { oversized.store(true, ordering: .relaxed) }
        }
        connection.close()
        finished.signal()
    }
}
