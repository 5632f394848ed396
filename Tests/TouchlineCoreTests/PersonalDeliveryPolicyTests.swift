import Foundation
import Testing
import TouchlineCore

@Suite struct PersonalDeliveryPolicyTests {
    let policy = PersonalDeliveryPolicy(maxAttempts: 3, retryInitialMilliseconds: 100, retryMaximumMilliseconds: 1_000,
                                        throttleInitialMilliseconds: 5_000, throttleMaximumMilliseconds: 60_000,
                                        multiplier: 2, jitter: 0)

    @Test func finalOutcomesEndTheTarget() {
        var rng = SplitMix64(seed: 1)
        #expect(policy.decide(.accepted, attempt: 1, using: &rng) == .sent)
        #expect(policy.decide(.tokenDead(timestampMilliseconds: 42), attempt: 1, using: &rng) == .deactivate(timestampMilliseconds: 42))
        #expect(policy.decide(.permanent(reason: "BadDeviceToken"), attempt: 1, using: &rng) == .deadLetter(reason: "BadDeviceToken"))
        #expect(policy.decide(.configuration(reason: "InvalidProviderToken"), attempt: 1, using: &rng) == .deadLetter(reason: "InvalidProviderToken"))
    }

    /// A push that must not be repeated and got no answer ends at once, whatever attempt it was:
    /// dead-lettered `Unconfirmed`, never sent again by the gateway.
    @Test func anUnconfirmedSendIsNeverRetried() {
        var rng = SplitMix64(seed: 1)
        for attempt in 1...3 {
            #expect(policy.decide(.unconfirmed, attempt: attempt, using: &rng) == .deadLetter(reason: PersonalDeliveryPolicy.unconfirmedReason))
        }
        #expect(PersonalDeliveryPolicy.unconfirmedReason == "Unconfirmed")
    }

    @Test func retryableOutcomesBackOffExponentiallyUntilAttemptsRunOut() {
        var rng = SplitMix64(seed: 1)
        for outcome in [PersonalOutcome.retryLater, .retryOnNewConnection] {
            #expect(policy.decide(outcome, attempt: 1, using: &rng) == .retry(after: .milliseconds(100)))
            #expect(policy.decide(outcome, attempt: 2, using: &rng) == .retry(after: .milliseconds(200)))
            #expect(policy.decide(outcome, attempt: 3, using: &rng) == .deadLetter(reason: PersonalDeliveryPolicy.retriesExhaustedReason))
        }
    }

    @Test func handBacksUseTheirOwnBoundAndLeaveAttemptsAlone() {
        var rng = SplitMix64(seed: 1)
        let bounded = PersonalDeliveryPolicy(maxAttempts: 1, maxHandBacks: 3, retryInitialMilliseconds: 100, jitter: 0)
        // attempt 1 is the last maxAttempts allows, yet a hand-back is retried with the back-off.
        #expect(bounded.decide(.notProcessed, attempt: 0, handBacks: 1, using: &rng) == .retry(after: .milliseconds(100)))
        #expect(bounded.decide(.notProcessed, attempt: 1, handBacks: 2, using: &rng) == .retry(after: .milliseconds(200)))
        #expect(bounded.decide(.notProcessed, attempt: 1, handBacks: 3, using: &rng)
                    == .deadLetter(reason: PersonalDeliveryPolicy.notProcessedReason))
        #expect(bounded.decide(.retryLater, attempt: 1, handBacks: 2, using: &rng)
                    == .deadLetter(reason: PersonalDeliveryPolicy.retriesExhaustedReason))
    }

    @Test func aPolicySavedWithoutMaxHandBacksDecodesWithTheDefault() throws {
        let saved = #"{"maxAttempts": 3, "retryInitialMilliseconds": 100, "retryMaximumMilliseconds": 1000,"#
            + #" "throttleInitialMilliseconds": 5000, "throttleMaximumMilliseconds": 60000, "multiplier": 2, "jitter": 0}"#
        let decoded = try JSONDecoder().decode(PersonalDeliveryPolicy.self, from: Data(saved.utf8))
        #expect(decoded == policy)
        #expect(decoded.maxHandBacks == PersonalDeliveryPolicy().maxHandBacks)
    }

    @Test func throttledTokenWaitsOnItsOwnLongerBackoff() {
        var rng = SplitMix64(seed: 1)
        #expect(policy.decide(.throttledToken, attempt: 1, using: &rng) == .retry(after: .seconds(5)))
        #expect(policy.decide(.throttledToken, attempt: 2, using: &rng) == .retry(after: .seconds(10)))
    }

    @Test func jitteredDelaysStayWithinTheirStep() {
        let jittered = PersonalDeliveryPolicy()
        var rng = SplitMix64(seed: 7)
        for _ in 0..<100 {
            guard case .retry(let delay) = jittered.decide(.retryLater, attempt: 2, using: &rng) else { Issue.record("no retry"); return }
            #expect(delay >= .milliseconds(500) && delay <= .milliseconds(1_000))
        }
    }

    @Test func deactivatesOnlyTokensNotRegisteredAgainAfterTheTimestamp() {
        let registered = UnixTime(seconds: 1_767_225_600)
        let before = registered.nanoseconds / 1_000_000 - 1
        let after = registered.nanoseconds / 1_000_000 + 1
        #expect(PersonalDeliveryPolicy.shouldDeactivate(registeredAt: registered, apnsTimestampMilliseconds: after))
        #expect(!PersonalDeliveryPolicy.shouldDeactivate(registeredAt: registered, apnsTimestampMilliseconds: before))
        #expect(PersonalDeliveryPolicy.shouldDeactivate(registeredAt: registered, apnsTimestampMilliseconds: nil))
        #expect(PersonalDeliveryPolicy.shouldDeactivate(registeredAt: registered, apnsTimestampMilliseconds: .max))
    }

    @Test func roundTripsThroughJSON() throws {
        let data = try JSONEncoder().encode(policy)
        #expect(try JSONDecoder().decode(PersonalDeliveryPolicy.self, from: data) == policy)
    }
}
