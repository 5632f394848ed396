import Foundation
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A fresh directory for one test's database files, removed at the end.
final class TemporaryDirectory {
    let path: String

    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-store-\(UUID().uuidString)").path
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }
}

let t0 = UnixTime(seconds: 1_767_225_600)

func channel(_ id: String, status: ChannelStatus = .active, apnsID: String? = nil) -> ChannelRecord {
    ChannelRecord(id: id, apnsChannelID: apnsID, storagePolicy: .mostRecent, policyJSON: #"{"minInterval":2}"#,
                  status: status, createdAt: t0, contentState: Array(#"{"home":0,"away":0}"#.utf8))
}

func event(_ channelID: String, _ seq: Int64) -> StoredEvent {
    StoredEvent(channelID: channelID, seq: seq, receivedAt: t0 + .seconds(seq), body: Array(#"{"seq":\#(seq),"type":"goal"}"#.utf8))
}

/// Holds SQLite's write lock from a second connection, so the writer's next `BEGIN IMMEDIATE`
/// waits and everything submitted meanwhile piles up for one group commit.
final class WriteLockHolder {
    private let connection: SQLiteConnection

    init(path: String) throws {
        connection = try SQLiteConnection(path: path)
        try connection.execute("BEGIN IMMEDIATE")
    }

    func release() throws {
        try connection.execute("COMMIT")
        connection.close()
    }
}

extension StoreWriter {
    /// Submits a batch and returns once the writer has taken it, i.e. is now waiting for the
    /// write lock held by a ``WriteLockHolder``: later submits then share the next transaction.
    func parkBehindHeldLock() {
        submit(WriteBatch()) { _ in }
        while queueDepth > 0 { usleep(1_000) }
    }

    /// Submits from the calling thread and blocks until the batch is durable.
    func submitAndWait(_ batch: WriteBatch) -> Result<Void, StoreError> {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        submit(batch) { outcome in
            result.set(outcome)
            done.signal()
        }
        done.wait()
        return result.get()
    }
}

final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<Void, StoreError>?
    func set(_ result: Result<Void, StoreError>) { lock.withLock { value = result } }
    func get() -> Result<Void, StoreError> { lock.withLock { value! } }
}

/// Runs `body(index)` on `count` dedicated threads at once and resumes when all of them are done.
/// (`DispatchQueue.concurrentPerform` would cap the parallelism at the core count.)
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        Thread {
            body(index)
            done.leave()
        }.start()
    }
    await everyoneLeft(done)
}

/// Resumes once every `enter` of `group` is matched by a `leave`: awaited, so that no thread of
/// Swift's small task pool waits for the commits meanwhile (other tests need it).
func everyoneLeft(_ group: DispatchGroup) async {
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in group.notify(queue: .global()) { done.resume() } }
}
