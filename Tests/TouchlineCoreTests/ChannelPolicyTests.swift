import Foundation
import Testing
import TouchlineCore

@Suite struct ChannelPolicyTests {
    func decode(_ json: String) throws -> ChannelPolicy {
        try ChannelPolicy(json: JSONParser.parse(Array(json.utf8)))
    }

    @Test func anEmptyObjectGivesTheDefaults() throws {
        let policy = try decode("{}")
        #expect(policy == .default)
        #expect(policy.minimumInterval == .seconds(2))
        #expect(policy.burst == 3)
        #expect(policy.priorityBudgetPerHour == 10)
        #expect(policy.freshness == .seconds(1200))
        #expect(policy.relevanceScore == 100)
    }

    @Test func aPartialPolicyOverridesOnlyWhatItNames() throws {
        let policy = try decode(#"{"minimumIntervalSeconds": 0.5, "relevanceScore": null, "throttleBackoff": {"jitter": 0}}"#)
        #expect(policy.minimumInterval == .milliseconds(500))
        #expect(policy.relevanceScore == nil)
        #expect(policy.throttleBackoff.jitter == 0)
        #expect(policy.throttleBackoff.initial == ChannelPolicy.default.throttleBackoff.initial)
        #expect(policy.burst == 3)
    }

    @Test func survivesAJSONRoundTrip() throws {
        let policy = ChannelPolicy(minimumInterval: .milliseconds(1500), burst: 5, priorityBudgetPerHour: 4, relevanceScore: 50,
                                   throttleBackoff: Backoff(initial: .seconds(1), maximum: .seconds(30), multiplier: 3, jitter: 0.1),
                                   endGracePeriod: .zero)
        #expect(try ChannelPolicy(json: JSONParser.parse(policy.json.encoded)) == policy)
    }

    /// The values that would be stored as zero (and could then not be read back) are refused
    /// after conversion, for every duration member.
    @Test(arguments: ["minimumIntervalSeconds", "freshnessSeconds", "mostRecentLifetimeSeconds"])
    func aDurationBelowOneMillisecondIsRefused(member: String) {
        for tiny in ["1e-19", "0.0000000004", "0.0009"] {
            #expect { try decode(#"{"\#(member)": \#(tiny)}"#) } throws: { error in
                (error as? ChannelPolicyError)?.field == member
            }
        }
        #expect(throws: ChannelPolicyError.self) { try decode(#"{"throttleBackoff": {"initialSeconds": 1e-12}}"#) }
    }

    @Test func everyAcceptedPolicyReadsBackToTheSameValue() throws {
        for json in [#"{"minimumIntervalSeconds": 0.001}"#, #"{"freshnessSeconds": 0.0123456789, "lowImportanceIntervalSeconds": 0.01}"#, #"{"endGracePeriodSeconds": 0}"#,
                     #"{"minimumIntervalSeconds": 86400, "mostRecentLifetimeSeconds": 28800}"#] {
            let policy = try decode(json)
            #expect(try ChannelPolicy(json: JSONParser.parse(policy.json.encoded)) == policy, "\(json)")
            #expect(policy.minimumInterval >= ChannelPolicy.shortestDuration)
        }
    }

    @Test func aWrongTypeIsNamedByItsMember() {
        #expect { try decode(#"{"burst": 2.5}"#) } throws: { error in
            let error = error as? ChannelPolicyError
            return error?.field == "burst" && error?.problem == "must be a whole number from 1 to 1000, got 2.5"
        }
        #expect { try decode(#"{"throttleBackoff": {"jitter": "x"}}"#) } throws: { error in
            (error as? ChannelPolicyError)?.description == "channel policy: throttleBackoff.jitter must be a number, got a string"
        }
        #expect { try decode(#"{"burstt": 2}"#) } throws: { error in (error as? ChannelPolicyError)?.field == "burstt" }
    }

    @Test(arguments: [
        (#"{"burst": 0}"#, "burst"),
        (#"{"minimumIntervalSeconds": 0}"#, "minimumIntervalSeconds"),
        (#"{"minimumIntervalSeconds": 1e300}"#, "minimumIntervalSeconds"),
        (#"{"freshnessSeconds": -5}"#, "freshnessSeconds"),
        (#"{"priorityBudgetPerHour": -1}"#, "priorityBudgetPerHour"),
        (#"{"priorityBudgetPerHour": 5000}"#, "priorityBudgetPerHour"),
        (#"{"throttleBackoff": {"jitter": 2}}"#, "throttleBackoff.jitter"),
        (#"{"throttleBackoff": {"initialSeconds": 10, "maximumSeconds": 5}}"#, "throttleBackoff.maximumSeconds"),
        (#"{"throttleBackoff": {"multiplier": 0.5}}"#, "throttleBackoff.multiplier"),
        (#"{"mostRecentLifetimeSeconds": 30000}"#, "mostRecentLifetimeSeconds"),
        (#"{"criticalBurst": -1}"#, "criticalBurst"),
        (#"{"criticalBurst": 1.5}"#, "criticalBurst"),
        (#"{"criticalIntervalSeconds": 0}"#, "criticalIntervalSeconds"),
        (#"{"lowImportanceIntervalSeconds": -1}"#, "lowImportanceIntervalSeconds"),
        (#"{"lowImportanceIntervalSeconds": 1200}"#, "lowImportanceIntervalSeconds"),
        (#"{"freshnessSeconds": 20}"#, "lowImportanceIntervalSeconds"),
        (#"{"maximumActivityAgeSeconds": 599}"#, "maximumActivityAgeSeconds"),
        (#"{"maximumActivityAgeSeconds": 28201}"#, "maximumActivityAgeSeconds"),
        (#"{"maximumActivityAgeSeconds": -1}"#, "maximumActivityAgeSeconds"),
    ])
    func outOfRangeValuesAreRefusedNamingTheField(json: String, field: String) {
        #expect { try decode(json) } throws: { error in
            (error as? ChannelPolicyError)?.field == field
        }
    }

    @Test func thePacingMembersHaveTheirDefaultsAndReadBack() throws {
        let defaults = try decode("{}")
        #expect(defaults.criticalBurst == 2 && defaults.criticalInterval == .seconds(10) && defaults.lowImportanceInterval == .seconds(30))
        let uniform = try decode(#"{"criticalBurst": 0, "lowImportanceIntervalSeconds": 0}"#)
        #expect(uniform == .uniformPacing)
        let custom = try decode(#"{"criticalBurst": 4, "criticalIntervalSeconds": 2.5, "lowImportanceIntervalSeconds": 45}"#)
        #expect(custom.criticalBurst == 4 && custom.criticalInterval == .milliseconds(2500) && custom.lowImportanceInterval == .seconds(45))
        #expect(try ChannelPolicy(json: JSONParser.parse(custom.json.encoded)) == custom)
    }

    /// Off by default; from 10 minutes to 7 h 50 min (Apple ends an activity at 8 hours, and the
    /// rollover needs the last ten minutes).
    @Test func theMaximumActivityAgeIsOffByDefaultAndBoundedByAppleLimit() throws {
        #expect(try decode("{}").maximumActivityAge == .zero)
        #expect(try decode(#"{"maximumActivityAgeSeconds": 600}"#).maximumActivityAge == .seconds(600))
        let longest = try decode(#"{"maximumActivityAgeSeconds": 28200}"#)
        #expect(longest.maximumActivityAge == .seconds(28_200))
        #expect(try ChannelPolicy(json: JSONParser.parse(longest.json.encoded)) == longest)
    }

    /// The cadence is checked against the freshness of the same policy, whichever of the two a
    /// partial policy names, and the message names both.
    @Test func aLowCadenceAsLongAsTheFreshnessIsRefusedNamingBoth() {
        #expect { try decode(#"{"freshnessSeconds": 30}"#) } throws: { error in
            (error as? ChannelPolicyError)?.description == "channel policy: lowImportanceIntervalSeconds must be shorter than "
                + "freshnessSeconds (30) so that low updates alone keep the activity fresh, got 30"
        }
        #expect(throws: Never.self) { try decode(#"{"freshnessSeconds": 30, "lowImportanceIntervalSeconds": 29.999}"#) }
    }

    @Test func expirationDependsOnTheStoragePolicy() {
        let now = UnixTime(seconds: 1_767_290_400)
        #expect(ChannelPolicy.default.expiration(for: .noStorage, now: now) == 0)
        #expect(ChannelPolicy.default.expiration(for: .mostRecent, now: now) == now.seconds + 900)
    }
}
