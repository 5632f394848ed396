import Testing
import TouchlineCore

/// What every instance of a cluster must agree on: settings that keep leases safe, key names,
/// record bytes, instance names, and the balancing rule.
@Suite("Lease settings and bucket format")
struct LeaseBucketFormatTests {
    // MARK: Settings

    @Test func theDefaultsSuitPushesResumingWithin5SecondsOfAKill() throws {
        let settings = try LeaseSettings()
        #expect(settings.partitionCount == 64)
        #expect(settings.leaseTTL == .seconds(3) && settings.renewInterval == .seconds(1) && settings.safetyMargin == .milliseconds(500))
        #expect(settings.memberTTL == .seconds(3) && settings.writeTimeout == .milliseconds(500) && settings.retryDelay == .milliseconds(250))
        // A takeover comes at most a lease TTL after the last renewal seen, plus a heartbeat's
        // renew interval for the dead member to stop counting: 4 s, leaving a second.
        #expect(settings.leaseTTL + settings.renewInterval < .seconds(5))
    }

    @Test func badCombinationsAreRefusedNamingTheSetting() {
        let cases: [(String, () throws(LeaseSettingsError) -> LeaseSettings)] = [
            ("partitionCount", { () throws(LeaseSettingsError) in try LeaseSettings(partitionCount: 0) }),
            ("partitionCount", { () throws(LeaseSettingsError) in try LeaseSettings(partitionCount: 4097) }),
            ("leaseTTL", { () throws(LeaseSettingsError) in try LeaseSettings(leaseTTL: .zero) }),
            ("retryDelay", { () throws(LeaseSettingsError) in try LeaseSettings(retryDelay: .milliseconds(-1)) }),
            ("renewInterval", { () throws(LeaseSettingsError) in try LeaseSettings(leaseTTL: .seconds(2), renewInterval: .seconds(1)) }),
            ("safetyMargin", { () throws(LeaseSettingsError) in try LeaseSettings(safetyMargin: .seconds(2)) }),
            ("memberTTL", { () throws(LeaseSettingsError) in try LeaseSettings(memberTTL: .seconds(2)) }),
            ("writeTimeout", { () throws(LeaseSettingsError) in try LeaseSettings(writeTimeout: .milliseconds(1500)) }),
            ("retryDelay", { () throws(LeaseSettingsError) in try LeaseSettings(retryDelay: .seconds(2)) }),
        ]
        for (setting, make) in cases {
            do {
                _ = try make()
                Issue.record("accepted a bad \(setting)")
            } catch {
                #expect(error.setting == setting, "\(error)")
                #expect(error.description.hasPrefix("lease settings: \(setting) must"), "\(error)")
            }
        }
    }

    @Test func theLimitsThemselvesAreAccepted() throws {
        _ = try LeaseSettings(partitionCount: 1)
        _ = try LeaseSettings(partitionCount: LeaseSettings.maximumPartitionCount)
        _ = try LeaseSettings(leaseTTL: .seconds(3), renewInterval: .milliseconds(1499), safetyMargin: .milliseconds(1500),
                              writeTimeout: .milliseconds(1499), retryDelay: .milliseconds(1499))
    }

    // MARK: Keys, names, records

    @Test func keysHaveFixedNamesThatReadBack() throws {
        let member = try #require(InstanceID("gw-7_a"))
        #expect(LeaseKey.partition(12).name == "partition.12" && LeaseKey.member(member).name == "member.gw-7_a")
        for key in [LeaseKey.partition(0), .partition(63), .member(member)] { #expect(LeaseKey(name: key.name) == key) }
        for name in ["partition.", "partition.-1", "partition.07", "partition.+3", "partition.1x", "member.", "member.a.b", "other.1", ""] {
            #expect(LeaseKey(name: name) == nil, "\(name)")
        }
    }

    @Test func instanceNamesAreWhatEveryKeyValueStoreAcceptsInAKey() {
        #expect(InstanceID("touchline-0")?.name == "touchline-0")
        #expect(InstanceID(String(repeating: "a", count: InstanceID.maximumLength)) != nil)
        for bad in ["", "a.b", "a b", "a/b", "é", "a*", String(repeating: "a", count: InstanceID.maximumLength + 1)] {
            #expect(InstanceID(bad) == nil, "\(bad)")
        }
    }

    @Test func recordsReadBackFromTheirBytesAndNothingElseReads() throws {
        let record = LeaseRecord(holder: try #require(InstanceID("gw-1")), incarnation: 0xDEAD_BEEF_0123_4567, write: BucketWrite.ID(sequence: 42),
                                 ttl: .milliseconds(1_500))
        #expect(String(decoding: record.encoded, as: UTF8.self) == "2 gw-1 deadbeef01234567 42 1500")
        #expect(LeaseRecord(encoded: record.encoded) == record)
        for bad in ["", "1 gw-1 deadbeef", "2 gw-1 1 1", "1 gw.1 1 1", "1 gw-1 xyz 1", "1 gw-1 1 -1", "1 gw-1 1 1 extra", "1  1 1",
                    "2 gw-1 1 1 0", "2 gw-1 1 1 -5", "2 gw-1 1 1 86400001", "2 gw-1 1 1 1.5", "2 gw-1 1 1 100 extra", "3 gw-1 1 1 100"] {
            #expect(LeaseRecord(encoded: Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    /// Gateways before the TTL was written had 3 s for leases and heartbeats alike: their records
    /// still read, and name it.
    @Test func aRecordOfTheFirstFormatNamesTheTTLItsWritersHad() throws {
        let record = try #require(LeaseRecord(encoded: Array("1 gw-1 deadbeef01234567 42".utf8)))
        #expect(record == LeaseRecord(holder: try #require(InstanceID("gw-1")), incarnation: 0xDEAD_BEEF_0123_4567, write: BucketWrite.ID(sequence: 42),
                                      ttl: .seconds(3)))
        #expect(String(decoding: record.encoded, as: UTF8.self) == "2 gw-1 deadbeef01234567 42 3000")
    }

    // MARK: Shares

    @Test func sharesAddUpToThePartitionsAndTheLargerOnesGoToTheLargestHolders() throws {
        let (a, b, c) = (try #require(InstanceID("a")), try #require(InstanceID("b")), try #require(InstanceID("c")))
        let shares = PartitionShares(partitionCount: 64, holdings: [a: 20, b: 30, c: 14])
        #expect([shares[a], shares[b], shares[c]] == [21, 22, 21])
        #expect(shares[try #require(InstanceID("gone"))] == 0)
        // Ties go to the smaller name; a settled cluster keeps exactly what it holds.
        let settled = PartitionShares(partitionCount: 64, holdings: [a: 21, b: 21, c: 22])
        #expect([settled[a], settled[b], settled[c]] == [21, 21, 22])
        let tied = PartitionShares(partitionCount: 64, holdings: [a: 0, b: 0, c: 0])
        #expect([tied[a], tied[b], tied[c]] == [22, 21, 21])
    }

    @Test func aJoinerGetsTheSmallerShareEvenWhenEverybodyIsAtTheCeiling() throws {
        var holdings: [InstanceID: Int] = [:]
        for number in 0..<16 { holdings[try #require(InstanceID("m\(number)"))] = 4 }
        let joiner = try #require(InstanceID("joiner"))
        holdings[joiner] = 0
        let shares = PartitionShares(partitionCount: 64, holdings: holdings)
        #expect(shares[joiner] == 3)
        #expect(holdings.keys.map { shares[$0] }.reduce(0, +) == 64)
        #expect(holdings.keys.filter { shares[$0] == 4 }.count == 64 % 17)
    }
}
