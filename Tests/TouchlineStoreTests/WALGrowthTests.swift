import Dispatch
import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineStore

/// The write-ahead log of a writer that never pauses stays near its limit: passive checkpoints
/// beside such a writer never finish in time to restart the log (a million random tokens
/// registered back to back once grew it past 14 GB), so the writer checkpoints between its own
/// transactions once the log is too large.
@Suite(.heavy) struct WALGrowthTests {
    @Test func aWriterThatNeverPausesKeepsItsLogNearItsLimit() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("personal.db")
        let limit = 2 << 20
        let writer = try StoreWriter(path: path, walLimitBytes: limit)
        var random = SplitMix64(seed: 14)
        let window = DispatchSemaphore(value: 4)
        let lists = DispatchGroup()
        var largest = 0
        // Random tokens dirty pages all over the registry's indexes: each list appends megabytes.
        for list in 0..<120 {
            let operations: [TokenOperation] = (0..<200).map { n in
                let token = (0..<4).map { _ in String(format: "%016llx", random.next()) }.joined()
                return .registerToken(TokenRecord(token: token, kind: .pushToStart, userID: "user-\(list)-\(n)", follows: ["team:\(n % 20)"],
                                                  registeredAt: t0))
            }
            window.wait()
            lists.enter()
            writer.submit(operations) { result in
                #expect(throws: Never.self) { try result.get() }
                window.signal()
                lists.leave()
            }
            largest = max(largest, Self.logBytes(path))
        }
        lists.wait()
        largest = max(largest, Self.logBytes(path))
        writer.close()
        // Without the writer's own checkpoints this log reached 148 MB (and kept growing with the lists).
        #expect(largest < 48 << 20, "the log reached \(largest >> 20) MB with a limit of \(limit >> 20) MB")
    }

    static func logBytes(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
    }
}
