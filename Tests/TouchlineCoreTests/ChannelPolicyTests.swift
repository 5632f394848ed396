import Foundation
import Testing
import TouchlineCore

@Suite struct ChannelPolicyTests {
    func decode(_ json: String) throws -> ChannelPolicy {
        try JSONDecoder().decode(ChannelPolicy.self, from: Data(json.utf8))
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
        #expect(try JSONDecoder().decode(ChannelPolicy.self, from: JSONEncoder().encode(policy)) == policy)
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
    ])
    func outOfRangeValuesAreRefusedNamingTheField(json: String, field: String) {
        #expect { try decode(json) } throws: { error in
            (error as? ChannelPolicyError)?.field == field
        }
    }

    @Test func expirationDependsOnTheStoragePolicy() {
        let now = UnixTime(seconds: 1_767_290_400)
        #expect(ChannelPolicy.default.expiration(for: .noStorage, now: now) == 0)
        #expect(ChannelPolicy.default.expiration(for: .mostRecent, now: now) == now.seconds + 900)
    }
}
