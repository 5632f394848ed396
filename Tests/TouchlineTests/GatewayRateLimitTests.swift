import Foundation
import Testing
import TestSlots
@testable import Touchline
@testable import TouchlineAccess
import TouchlineCore
import TouchlineRuntime
import TouchlineTesting

/// Per-key request rate limits: a token bucket per configured key, checked from the head
/// alone (429 `rate_limited` with `Retry-After`), admin keys exempt unless given their own;
/// and the constant-time comparison the keys are found with.
@Suite("Gateway API key rate limits and comparison")
struct GatewayRateLimitTests {
    static let provider = GatewayConfiguration.APIKey(key: "provider-key-0123456789", scope: .channelPrefix("club-"))
    static let admin = GatewayConfiguration.APIKey(key: "admin-key-0123456789", scope: .admin)

    @Test func aBucketAdmitsItsBurstThenOneRequestPerIntervalInVirtualTime() {
        let start = UnixTime(seconds: 1_767_225_600)
        var limits = KeyRateLimits(keys: [Self.provider, Self.admin], providerDefault: KeyRateLimit(requestsPerSecond: 0.5, burst: 3),
                                          now: start)
        #expect((0..<3).map { _ in limits.admit(keyIndex: 0, now: start) } == [nil, nil, nil])
        #expect(limits.admit(keyIndex: 0, now: start) == 2, "one request comes back every 2 s")
        #expect(limits.admit(keyIndex: 0, now: start + .milliseconds(1_500)) == 1, "Retry-After rounds up, and is at least 1")
        #expect(limits.admit(keyIndex: 0, now: start + .seconds(2)) == nil)
        #expect(limits.admit(keyIndex: 0, now: start + .seconds(2)) == 2)
        // A long quiet spell refills the bucket to its burst, no more.
        let later = start + .seconds(3_600)
        #expect((0..<4).map { _ in limits.admit(keyIndex: 0, now: later) } == [nil, nil, nil, 2])
        // The admin key has no limit of its own: never refused.
        #expect((0..<1_000).allSatisfy { _ in limits.admit(keyIndex: 1, now: start) == nil })
    }

    @Test func aKeysOwnLimitWinsAndAdminKeysAreLimitedOnlyByTheirOwn() {
        let start = UnixTime(seconds: 1_767_225_600)
        var own = Self.provider
        own.rateLimit = KeyRateLimit(requestsPerSecond: 100, burst: 1)
        var limitedAdmin = Self.admin
        limitedAdmin.rateLimit = KeyRateLimit(requestsPerSecond: 1, burst: 2)
        var limits = KeyRateLimits(keys: [own, limitedAdmin, Self.provider], providerDefault: nil, now: start)
        #expect(limits.admit(keyIndex: 0, now: start) == nil && limits.admit(keyIndex: 0, now: start) == 1)
        #expect(limits.admit(keyIndex: 0, now: start + .milliseconds(10)) == nil, "100 per second: one back every 10 ms")
        #expect((0..<3).map { _ in limits.admit(keyIndex: 1, now: start) } == [nil, nil, 1])
        #expect((0..<1_000).allSatisfy { _ in limits.admit(keyIndex: 2, now: start) == nil }, "no default: no limit")
        #expect(limits.admit(keyIndex: 7, now: start) == nil, "an index outside the keys is not a limited key")
    }

    @Test(.heavy) func aBurstOverAProviderKeysRateGets429WithRetryAfterAndTheAdminKeyIsUnaffected() async throws {
        let fixture = try GatewayFixture { configuration in
            configuration.providerRateLimit = KeyRateLimit(requestsPerSecond: 0.01, burst: 5)
        }
        defer { Task { await fixture.shutDown() } }
        let provider = GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey)
        let answers = try (0..<7).map { _ in try provider.request("GET", "/v1/channels") }
        #expect(answers.map(\.status) == [200, 200, 200, 200, 200, 429, 429])
        let limited = try #require(answers.last)
        #expect(limited.errorCode == "rate_limited" && limited.text.contains("rate limit"), "\(limited.text)")
        let retryAfter = try #require(limited.header("Retry-After").flatMap(Int.init))
        #expect((1...100).contains(retryAfter), "one request back every 100 s: \(retryAfter)")
        // Refused from the head: a body is never read.
        let create = try provider.request("POST", "/v1/channels", json: #"{"id": "club-x", "storagePolicy": "no-storage"}"#)
        #expect(create.status == 429 && create.header("Retry-After") != nil)
        #expect(try fixture.admin.request("GET", "/v1/channels/club-x").status == 404, "the refused create did nothing")
        for _ in 0..<20 { #expect(try fixture.admin.request("GET", "/v1/channels").status == 200) }
        // Requests without a known key are not counted against it, and still get their 401.
        #expect(try provider.request("GET", "/v1/channels", key: .some("club-unknown-key-000")).status == 401)
        // Operators see the refusals by the key's scope, never by its secret.
        let metrics = try fixture.admin.request("GET", "/metrics").text
        #expect(metrics.contains(#"touchline_api_rate_limited_total{scope="club-"} 3"#), "\(metrics.prefix(600))")
        #expect(!metrics.contains(GatewayFixture.clubKey))
    }

    // MARK: Comparison

    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func theConstantTimeComparisonTellsEqualFromEveryKindOfDifference() {
        let a = SHA256.digest(Array("key-one".utf8))
        #expect(SHA256.constantTimeEqual(a, a))
        var last = a
        last[31] ^= 0x01
        var first = a
        first[0] ^= 0x80
        #expect(!SHA256.constantTimeEqual(a, last) && !SHA256.constantTimeEqual(a, first))
        #expect(!SHA256.constantTimeEqual(a, Array(a.dropLast())), "another length")
        #expect(SHA256.constantTimeEqual([], []))
    }

    @Test func aPresentedKeyIsFoundAmongTheConfiguredOnesByDigest() throws {
        let keys = [Self.admin, Self.provider, GatewayConfiguration.APIKey(key: "third-key-0123456789", scope: .channelPrefix("x-"))]
        let access = APIAccess(keys: keys)
        let digests = keys.map { SHA256.digest($0.key.utf8) }
        #expect(APIAccess.match(digests[2], among: digests) == 2)
        #expect(APIAccess.match(digests[0], among: digests) == 0)
        #expect(APIAccess.match(SHA256.digest("nobody".utf8), among: digests) == nil)
        #expect(APIAccess.match(digests[0], among: []) == nil)
        #expect(try access.key(authorization: "Bearer provider-key-0123456789") == Self.provider)
        #expect(try access.index(authorization: "bearer third-key-0123456789") == 2)
        // A prefix or an extension of a key is not the key.
        for guess in ["provider-key-012345678", "provider-key-01234567890", "PROVIDER-KEY-0123456789"] {
            #expect(throws: HTTPError.self) { try access.key(authorization: "Bearer \(guess)") }
        }
    }
}
