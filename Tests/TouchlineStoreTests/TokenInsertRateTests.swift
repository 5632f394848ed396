import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineStore

/// Registers 100,000 push-to-start tokens (two follows each) in batches of 1,000 and prints the
/// rate; never asserted (speed belongs to benchmarks, not unit tests).
@Suite(.serialized, .heavy) struct TokenInsertRateTests {
    @Test func tokenInsertRateIsPrinted() async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"))
        defer { writer.close() }
        let total = 100_000, batchSize = 1_000
        let start = DispatchTime.now()
        for chunk in stride(from: 0, to: total, by: batchSize) {
            try await writer.submit((chunk..<chunk + batchSize).map {
                .registerToken(TokenRecord(token: hexToken($0), kind: .pushToStart, userID: "user-\($0)",
                                           follows: ["team:T\($0 % 20)", "league:EPL"], registeredAt: t0))
            })
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        print("token registry: \(total) tokens in batches of \(batchSize) in \(String(format: "%.2f", seconds)) s = \(Int(Double(total) / seconds)) tokens/s")
        let reader = try SQLiteTokenReader(path: writer.path)
        defer { reader.close() }
        #expect(try reader.token(hexToken(total - 1))?.follows == ["league:EPL", "team:T19"])
    }
}
