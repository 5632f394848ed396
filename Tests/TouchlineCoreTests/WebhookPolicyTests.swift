import Testing
import TouchlineCore

/// The webhook delivery rules in virtual time: back-off, the dead-letter age, the alert
/// throttle, URL checks and the signature's form.
@Suite struct WebhookPolicyTests {
    let start = UnixTime(seconds: 1_767_225_600)

    @Test func failuresBackOffExponentiallyUpToTheCapThenDieAtTheAge() {
        let policy = WebhookRetryPolicy(backoff: Backoff(initial: .seconds(1), maximum: .seconds(60), multiplier: 2, jitter: 0),
                                        deadAfter: .seconds(600))
        var random = SplitMix64(seed: 1)
        var now = start
        var delays: [Duration] = []
        var attempts = 0
        while true {
            attempts += 1
            let decision = policy.decide(succeeded: false, attempts: attempts, createdAt: start, now: now, using: &random)
            guard case .retry(let at) = decision else {
                #expect(decision == .dead)
                break
            }
            delays.append(at - now)
            now = at
        }
        #expect(Array(delays.prefix(8)) == [1, 2, 4, 8, 16, 32, 60, 60].map { Duration.seconds($0) })
        // The last retry is due within the age; the one after would not be.
        #expect(now - start <= .seconds(600) && now - start > .seconds(540))
        #expect(policy.decide(succeeded: true, attempts: attempts + 1, createdAt: start, now: now + .seconds(10_000), using: &random) == .delivered)
    }

    @Test func jitterStaysWithinItsShareOfTheDelay() {
        let policy = WebhookRetryPolicy(backoff: Backoff(initial: .seconds(10), maximum: .seconds(10), multiplier: 2, jitter: 0.5))
        var random = SplitMix64(seed: 7)
        let delays = (0..<200).map { _ -> Duration in
            guard case .retry(let at) = policy.decide(succeeded: false, attempts: 3, createdAt: start, now: start, using: &random) else { return .zero }
            return at - start
        }
        #expect(delays.allSatisfy { $0 >= .seconds(5) && $0 <= .seconds(10) })
        #expect(Set(delays).count > 100)
    }

    @Test func theThrottleAdmitsOncePerIntervalPerKey() {
        var throttle = WebhookAlertThrottle(interval: .seconds(300))
        let admitted = [throttle.admit("InvalidProviderToken", now: start), throttle.admit("InvalidProviderToken", now: start + .seconds(299)),
                        throttle.admit("BadCertificate", now: start + .seconds(1)), throttle.admit("InvalidProviderToken", now: start + .seconds(300))]
        #expect(admitted == [true, false, true, true])
    }

    @Test func urlsAreCheckedStrictly() throws {
        let url = try WebhookURL(parsing: "https://hooks.example.com/touchline?team=1")
        #expect(url.isTLS && url.host == "hooks.example.com" && url.port == 443 && url.target == "/touchline?team=1")
        #expect(url.authority == "hooks.example.com")
        let plain = try WebhookURL(parsing: "http://[::1]:8081")
        #expect(!plain.isTLS && plain.host == "::1" && plain.port == 8081 && plain.target == "/" && plain.authority == "[::1]:8081")
        for (text, problem) in [("ftp://x/", "must start with http:// or https://"), ("https://user:pw@x/", "must not carry a user name"),
                                ("http://x:0/", "invalid port"), ("http:///path", "has no host"), ("http://x/a b", "printable ASCII"),
                                ("http://x/#frag", "fragment")] {
            #expect { try WebhookURL(parsing: text) } throws: { ($0 as? WebhookURLError)?.predicate.contains(problem) == true }
        }
    }

    @Test func theSignatureHeaderNamesTheTimestampAndTheHexMAC() {
        #expect(WebhookSignature.signedPayload(timestamp: 42, body: Array("{}".utf8)) == Array("42.{}".utf8))
        #expect(WebhookSignature.headerValue(timestamp: 42, mac: [0x00, 0xab, 0xff]) == "t=42,v1=00abff")
    }
}
