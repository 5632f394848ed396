import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Personal tables written before they had a file of their own move there once, whole.
@Suite struct PersonalStoreSplitTests {
    @Test func legacyTokensJobsAndDeadLettersAreCopiedOnceIntoTheNewFile() async throws {
        let dir = TemporaryDirectory()
        let channels = dir.file("touchline.sqlite"), personal = dir.file("personal.sqlite")
        do {
            let legacy = try StoreWriter(path: channels)
            _ = try await legacy.createChannel(channel("m1"))
            try await legacy.submit([
                .registerToken(TokenRecord(token: "aa01", kind: .pushToStart, userID: "u1", follows: ["team:ARS"], registeredAt: t0)),
                .createJob(personalJob("j1")),
                .deadLetter(DeadLetterRecord(jobID: "j1", token: "aa01", reason: "BadDeviceToken", at: t0)),
            ])
            legacy.close()
        }
        try PersonalStoreSplit.copyLegacyRows(from: channels, to: personal)
        let reader = try SQLiteTokenReader(path: personal)
        #expect(try reader.token("aa01")?.follows == ["team:ARS"])
        #expect(try reader.job(id: "j1") != nil)
        #expect(try reader.deadLetters(after: 0, limit: 10).map(\.token) == ["aa01"])
        reader.close()
        #expect(!FileManager.default.fileExists(atPath: personal + ".copying"))

        // Once the personal file exists, nothing is copied again.
        let writer = try StoreWriter(path: personal)
        try await writer.submit([.deleteToken("aa01")])
        writer.close()
        try PersonalStoreSplit.copyLegacyRows(from: channels, to: personal)
        #expect(try SQLiteTokenReader(path: personal).token("aa01") == nil)
    }

    @Test func aStoreWithoutPersonalRowsGetsNoCopy() async throws {
        let dir = TemporaryDirectory()
        let channels = dir.file("touchline.sqlite"), personal = dir.file("personal.sqlite")
        let legacy = try StoreWriter(path: channels)
        _ = try await legacy.createChannel(channel("m1"))
        legacy.close()
        try PersonalStoreSplit.copyLegacyRows(from: channels, to: personal)
        #expect(!FileManager.default.fileExists(atPath: personal))
    }
}
