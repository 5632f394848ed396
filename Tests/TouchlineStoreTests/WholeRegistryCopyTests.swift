import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A gateway's whole copy of a shared registry goes from its personal file once the cluster
/// holds the registry partitioned; the rest of the file stays.
@Suite struct WholeRegistryCopyTests {
    @Test func theTokensGoAndTheFileShrinksWhileJobsAndDeadLettersStay() async throws {
        let dir = TemporaryDirectory()
        let personal = dir.file("personal.sqlite")
        do {
            let writer = try StoreWriter(path: personal)
            let tokens = (0..<2_000).map { n in
                TokenOperation.registerToken(TokenRecord(token: String(format: "%064x", n), kind: .pushToStart, userID: "u\(n)",
                                                         follows: ["team:ARS", "team:CHE"], registeredAt: t0))
            }
            try await writer.submit(tokens + [
                .createJob(personalJob("j1")),
                .deadLetter(DeadLetterRecord(jobID: "j1", token: String(format: "%064x", 1), reason: "BadDeviceToken", at: t0)),
            ])
            writer.close()
        }
        let before = Self.bytes(personal)
        #expect(try WholeRegistryCopy.remove(from: personal) == 2_000)
        let reader = try SQLiteTokenReader(path: personal)
        defer { reader.close() }
        #expect(try reader.tokens(after: nil, limit: 10).isEmpty)
        #expect(try reader.job(id: "j1") != nil)
        #expect(try reader.deadLetters(after: 0, limit: 10).count == 1)
        #expect(Self.bytes(personal) < before / 2, "the deleted rows' pages are given back")
        #expect(try WholeRegistryCopy.remove(from: personal) == 0, "once only")
        #expect(try WholeRegistryCopy.remove(from: dir.file("missing.sqlite")) == 0)
        #expect(!FileManager.default.fileExists(atPath: dir.file("missing.sqlite")), "a missing file is not made")
    }

    private static func bytes(_ path: String) -> Int {
        ["", "-wal"].reduce(0) { total, suffix in
            total + ((try? FileManager.default.attributesOfItem(atPath: path + suffix)[.size] as? Int) ?? 0)
        }
    }
}
