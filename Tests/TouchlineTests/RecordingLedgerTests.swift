import Testing
@testable import Touchline
@testable import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// The recording and shadow-channel quotas' bookkeeping, without a gateway.
struct RecordingLedgerTests {
    static let keys: [GatewayConfiguration.APIKey] = [
        .init(key: "a", scope: .admin), .init(key: "b", scope: .channelPrefix("club-")), .init(key: "c", scope: .channelPrefix("club-ars-")),
        .init(key: "d", scope: .channelPrefix("match-"), app: "tv"),
    ]

    static func ledger(perKey: Int = 1_000, total: Int = 1_500) -> RecordingLedger {
        var limits = RecordingLimits()
        (limits.maxRecordedBytesPerKey, limits.maxRecordedBytes) = (perKey, total)
        return RecordingLedger(limits: limits, keys: keys)
    }

    @Test func aChannelCountsAgainstTheLongestPrefixOfItsApp() {
        let ledger = Self.ledger()
        #expect(ledger.owner(of: "club-che-1") == "club-")
        #expect(ledger.owner(of: "club-ars-1") == "club-ars-")
        #expect(ledger.owner(of: AppChannelID.qualified("match-1", app: "tv")) == "tv/match-")
        #expect(ledger.owner(of: "match-1") == "admin", "the tv key's prefix covers none of the default app's channels")
        #expect(ledger.owner(of: "ops-1") == "admin")
    }

    @Test func theRoomIsWhatBothQuotasLeaveAndAReservationTakesItAtOnce() {
        var ledger = Self.ledger()
        ledger.add("club-1", isShadow: false, records: true, bytes: 400)
        ledger.add("ops-1", isShadow: false, records: true, bytes: 900)
        #expect(ledger.room(for: "club-1", events: 10) == .init(events: FeedRecording.maximumEvents - 10, bytes: 200), "the gateway's 1,500 leave 200")
        ledger.reserve(150, for: "club-1")
        #expect(ledger.room(for: "club-2", events: 0) == .init(events: 0, bytes: 0), "not a recording it knows")
        ledger.add("club-2", isShadow: false, records: true)
        #expect(ledger.room(for: "club-2", events: 0).bytes == 50)
        ledger.release(150, for: "club-1")
        #expect(ledger.totalBytes == 1_300 && ledger.bytesByKey["club-"] == 400)
        ledger.stop("club-1", byQuota: true)
        #expect(ledger.room(for: "club-1", events: 10) == .init(events: 0, bytes: 0) && ledger.stoppedByQuota == 1)
        ledger.remove("ops-1")
        #expect(ledger.totalBytes == 400 && ledger.room(for: "club-2", events: 0).bytes == 600)
    }

    @Test func createsAreRefusedByNameOnceAQuotaIsFull() {
        var ledger = Self.ledger(perKey: 500)
        ledger.add("club-1", isShadow: false, records: true, bytes: 500)
        #expect(throws: HTTPError.self) { try ledger.admit(creating: "club-2", isShadow: false, records: true) }
        #expect(ledger.refusedCreates == ["recording_quota_exceeded": 1])
        #expect((try? ledger.admit(creating: "club-2", isShadow: false, records: false)) != nil, "no recording, no quota")
        #expect((try? ledger.admit(creating: "club-ars-1", isShadow: false, records: true)) != nil, "another key's quota")
    }
}
