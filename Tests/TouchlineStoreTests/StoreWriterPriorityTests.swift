import Foundation
import Testing
import TestSlots
import TouchlineStore

/// A store opened with a niceness runs its writer and checkpointer threads at that CPU priority
/// (read back from /proc, where Linux keeps each thread's nice value).
@Suite(.heavy) struct StoreWriterPriorityTests {
    /// The nice values of this process's threads named `name`.
    func niceValues(ofThreadsNamed name: String) -> [Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task -> Int? in
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            // After the command: state is field 3, nice is field 19.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 16 ? Int(fields[16]) : nil
        }
    }

    @Test func aLoweredStoreRunsItsThreadsAtThatNiceness() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"), niceness: 7)
        defer { writer.close() }
        // The threads lower themselves as they start; a commit shows the writer is running.
        try await writer.submit([.createJob(personalJob("j1"))])
        var checkpointer: [Int] = []
        for _ in 0..<100 where checkpointer.isEmpty || checkpointer.contains(0) {
            checkpointer = niceValues(ofThreadsNamed: "wal-checkpoint")
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(niceValues(ofThreadsNamed: "store-writer").contains(7))
        #expect(checkpointer.contains(7))
    }
}
