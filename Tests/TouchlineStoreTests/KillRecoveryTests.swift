import ChildProcesses
import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// `kill -9` recovery with a real process: the test binary re-runs itself as a child that
/// commits batches through a `StoreWriter` and reports each acknowledgement on stdout; the
/// parent SIGKILLs it mid-stream and checks that every acknowledged batch is in the database.
@Suite(.heavy) struct KillRecoveryTests {
    static let databaseVariable = "TOUCHLINE_STORE_KILL_CHILD_DB"
    static let ackPrefix = "store-kill-child ack "

    @Test func everyAcknowledgedBatchSurvivesSIGKILL() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("store.db")
        let child = try ChildProcess(URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path,
                                     ["--testing-library", "swift-testing", "--filter", "writeBatchesUntilKilled"],
                                     environment: ProcessInfo.processInfo.environment.merging([Self.databaseVariable: path]) { $1 },
                                     output: .pipe, errors: .null)
        let watchdog = DispatchWorkItem { child.signal(SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)

        // The child's output is read on a thread of its own: blocking one of the task pool's few
        // threads for seconds would hold up the tests running beside this one.
        let acknowledged = await withCheckedContinuation { (done: CheckedContinuation<Int64, Never>) in
            Thread {
                var acknowledged: Int64 = 0
                var pending = ""
                while acknowledged < 2_000 {
                    guard let data = child.output!.read() else { break }
                    pending += String(decoding: data, as: UTF8.self)
                    while let newline = pending.firstIndex(of: "\n") {
                        let line = pending[..<newline]
                        pending = String(pending[pending.index(after: newline)...])
                        if line.hasPrefix(Self.ackPrefix), let seq = Int64(line.dropFirst(Self.ackPrefix.count)) {
                            acknowledged = max(acknowledged, seq)
                        }
                    }
                }
                done.resume(returning: acknowledged)
            }.start()
        }
        child.signal(SIGKILL)
        watchdog.cancel()
        #expect(await child.ended() == .signalled(SIGKILL), "the child was killed, it did not finish")
        try #require(acknowledged >= 2_000, "the child acknowledged \(acknowledged) batches before its output ended")

        let reader = try SQLiteChannelReader(path: path)
        let stored = try #require(try reader.channel(id: "m"))
        #expect(stored.lastSeq >= acknowledged)
        print("kill -9: child \(child.pid) acknowledged \(acknowledged) batches; the database holds \(stored.lastSeq)")
        let seqs = try reader.events(channelID: "m", afterSeq: 0, limit: 100_000).map(\.seq)
        #expect(Array(seqs.prefix(Int(acknowledged))) == Array(1...acknowledged))
    }

    /// The child half: runs only when the parent test starts this binary with the database path.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[databaseVariable] != nil))
    func writeBatchesUntilKilled() throws {
        let path = try #require(ProcessInfo.processInfo.environment[Self.databaseVariable])
        let writer = try StoreWriter(path: path)
        let created = DispatchSemaphore(value: 0)
        writer.createChannel(channel("m")) { _ in created.signal() }
        created.wait()
        // Bounded, so a child whose parent died never outlives it for long.
        let deadline = Date().addingTimeInterval(60)
        var seq: Int64 = 0
        while Date() < deadline {
            seq += 1
            let acked = DispatchSemaphore(value: 0)
            let next = seq
            writer.submit(WriteBatch([
                .appendEvents([event("m", next)]),
                .updateState(ChannelStateUpdate(channelID: "m", updatedAt: t0 + .seconds(next), lastSeq: next)),
            ])) { result in
                if case .success = result {
                    FileHandle.standardOutput.write(Data("\(Self.ackPrefix)\(next)\n".utf8))
                }
                acked.signal()
            }
            // Keep a few batches in flight so the kill lands between and inside commits.
            if next % 4 == 0 { acked.wait() }
        }
        writer.close()
    }
}
