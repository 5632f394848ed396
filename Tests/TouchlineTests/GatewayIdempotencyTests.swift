import APNsMock
import Foundation
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting

/// `Idempotency-Key` on the routes that create personal jobs: a repeat answers the first 202
/// and creates nothing, another request under the same key is 422, a repeat while the first is
/// committed is 409, malformed keys are 400, and keys expire. The tests that read what reached
/// APNs run live; the others in process on the in-memory stores, which hold and fail commits on
/// demand.
@Suite("Gateway idempotency keys", .gatewaysInProcess)
struct GatewayIdempotencyTests {
    static func key(_ value: String) -> [(name: String, value: String)] { [("Idempotency-Key", value)] }

    static let emptyAudienceBody = GatewayPersonalAPITests.startBody.replacingOccurrences(of: "team:ARS", with: "team:NOBODY")

    @Test(.heavy) func aRepeatWithTheSameKeyAndBodyAnswersTheFirstJobAndSendsNothingMore() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let followers = (0..<5).map(GatewayPersonalAPITests.token)
        for (n, token) in followers.enumerated() { try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: api) }

        let first = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody, headers: Self.key("kick-1"))
        #expect(first.status == 202 && first.header("Idempotent-Replayed") == nil, "\(first.text)")
        let jobID = try #require(first.json?.string("jobId"))
        _ = try await GatewayDeadLetterTests.finished(jobID, on: api)

        // Bare and as a Structured Field string (the draft's form): the same key.
        for value in ["kick-1", #""kick-1""#] {
            let repeated = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody, headers: Self.key(value))
            #expect(repeated.status == 202 && repeated.body == first.body, "\(repeated.text)")
            #expect(repeated.header("Idempotent-Replayed") == "true")
        }
        let conflict = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: Self.key("kick-1"))
        #expect(conflict.status == 422 && conflict.errorCode == "idempotency_key_reused", "\(conflict.text)")
        #expect(conflict.text.contains("Idempotency-Key") && conflict.text.contains("kick-1"))

        #expect(try fixture.storedJobIDs() == [jobID], "the repeats created nothing")
        let starts = fixture.mock.recordedRequests().filter { $0.endpoint == .device }
        #expect(starts.count == 5 && Set(starts.compactMap(\.deviceToken)) == Set(followers), "each follower once")
        // Without a key a request behaves as before: a new job.
        let unkeyed = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody)
        #expect(unkeyed.status == 202 && unkeyed.json?.string("jobId") != jobID)
    }

    @Test(.heavy) func kickoffsAndReplaysRepeatTheirFirstAnswer() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-k1", "storagePolicy": "no-storage"}"#).status == 201)
        for n in 0..<3 { try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(n), follows: "team:ARS", user: "fan-\(n)", on: api) }
        let provider = GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey)
        let started = try provider.request("POST", "/v1/channels/club-k1/start", json: GatewayKickoffTests.startBody, headers: Self.key("ko-1"))
        #expect(started.status == 202, "\(started.text)")
        let again = try provider.request("POST", "/v1/channels/club-k1/start", json: GatewayKickoffTests.startBody, headers: Self.key("ko-1"))
        #expect(again.status == 202 && again.body == started.body && again.header("Idempotent-Replayed") == "true", "\(again.text)")
        // Keys belong to their API key: the admin key's "ko-1" is a key of its own.
        let admins = try api.request("POST", "/v1/channels/club-k1/start", json: GatewayKickoffTests.startBody, headers: Self.key("ko-1"))
        #expect(admins.status == 202 && admins.header("Idempotent-Replayed") == nil && admins.body != started.body, "\(admins.text)")

        for n in 0..<2 { try GatewayDeadLetterTests.register(GatewayDeadLetterTests.badToken(n), follows: "team:CHE", user: "bad-\(n)", on: api) }
        GatewayDeadLetterTests.disownBadTokens([0, 1], on: fixture)
        let failing = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody.replacingOccurrences(of: "team:ARS", with: "team:CHE"),
                                                              on: api)
        let replay = #"{"jobId": "\#(failing.id)"}"#
        let replayed = try api.request("POST", "/v1/deadletters/replay", json: replay, headers: Self.key("replay-1"))
        #expect(replayed.status == 202 && replayed.json?.integer("replayed") == 2, "\(replayed.text)")
        let repeated = try api.request("POST", "/v1/deadletters/replay", json: replay, headers: Self.key("replay-1"))
        #expect(repeated.status == 202 && repeated.body == replayed.body && repeated.header("Idempotent-Replayed") == "true", "\(repeated.text)")
        // Without the key the letters, replayed now, are not found again.
        #expect(try api.request("POST", "/v1/deadletters/replay", json: replay).errorCode == "dead_letter_not_found")
    }

    @Test func malformedKeysAreRefusedNamingTheHeaderAndCreateNothing() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let bad: [[(name: String, value: String)]] = [
            Self.key(""), Self.key(#""""#), Self.key(String(repeating: "k", count: 256)), Self.key("caf\u{e9}"), Self.key("tab\there"),
            Self.key(#""open"#), Self.key(#""in"side""#), Self.key(#""back\slash""#), Self.key("one") + Self.key("two"),
        ]
        for headers in bad {
            let refused = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: headers)
            #expect(refused.status == 400 && refused.errorCode == "invalid_idempotency_key", "\(headers): \(refused.text)")
            #expect(refused.text.contains("'Idempotency-Key'"), "\(refused.text)")
        }
        #expect(try fixture.storedJobIDs().isEmpty)
        let longest = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody,
                                      headers: Self.key(String(repeating: "k", count: 255)))
        #expect(longest.status == 202, "255 printable characters are a key: \(longest.text)")
        let escaped = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: Self.key(#""say \"hi\" \\o/""#))
        #expect(escaped.status == 202, "\(escaped.text)")
        #expect(try fixture.storedJobIDs().count == 2)
    }

    @Test func aRepeatWhileTheFirstIsBeingCommittedIsRefusedWith409() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        let personal = try #require(fixture.inMemory).personal
        defer { Task { await fixture.shutDown() } }
        // The held requests wait for as long as this test takes to release them on a busy machine.
        let api = fixture.admin.waiting(upTo: 60)
        // The personal store holds its commits (as behind another connection's write lock):
        // the first request's commit waits, for as long as the test takes.
        personal.holdCommits()
        let answers = Mutex<[GatewayTestClient.Response]>([])
        let done = DispatchGroup()
        for _ in 0..<2 {
            done.enter()
            // Blocking clients on threads of their own, not the task pool.
            Thread {
                if let answer = try? api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: Self.key("busy-1")) {
                    answers.withLock { $0.append(answer) }
                }
                done.leave()
            }.start()
        }
        try await eventually("the second request to be refused", timeout: .seconds(30)) { answers.withLock { $0.contains { $0.status == 409 } } }
        personal.releaseCommits()
        // Awaited, not waited for: a blocked thread of the task pool holds up other tests (each
        // request is bounded by its client's 10 s timeout).
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in done.notify(queue: .global()) { finished.resume() } }
        let both = answers.withLock { $0 }.sorted { $0.status < $1.status }
        #expect(both.map(\.status) == [202, 409], "\(both.map(\.text))")
        let busy = try #require(both.last)
        #expect(busy.errorCode == "idempotency_key_in_use" && busy.header("Retry-After") == "1")
        let jobID = try #require(both.first?.json?.string("jobId"))
        let later = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: Self.key("busy-1"))
        #expect(later.status == 202 && later.json?.string("jobId") == jobID && later.header("Idempotent-Replayed") == "true")
        #expect(try fixture.storedJobIDs() == [jobID])
    }

    @Test func aFailedCommitKeepsNothingSoTheRetryRunsAsNew() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let personal = try #require(fixture.inMemory).personal
        let api = fixture.admin
        personal.failStorage()
        let refused = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: Self.key("retry-1"))
        #expect(refused.status == 503 && refused.errorCode == "store_unavailable", "\(refused.text)")
        personal.restoreStorage()
        var retried: GatewayTestClient.Response?
        try await eventually("the store to take writes again") {
            retried = try? api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: Self.key("retry-1"))
            return retried?.status == 202
        }
        #expect(retried?.header("Idempotent-Replayed") == nil, "the first attempt left no record")
        #expect(try fixture.storedJobIDs() == [retried?.json?.string("jobId")].compactMap { $0 })
    }

    @Test func aKeyExpiresAfterItsLifetime() async throws {
        let clock = ManualClock(SystemClock().now())
        let fixture = try GatewayFixture(tier: .inProcess, clock: clock) { $0.idempotency = IdempotencySettings(keyLifetime: .seconds(600)) }
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let first = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: Self.key("daily"))
        let jobID = try #require(first.json?.string("jobId"), "\(first.text)")
        clock.advance(by: .seconds(599))
        let within = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: Self.key("daily"))
        #expect(within.json?.string("jobId") == jobID && within.header("Idempotent-Replayed") == "true", "\(within.head) \(within.text)")
        clock.advance(by: .seconds(1))
        let expired = try api.request("POST", "/v1/personal", json: Self.emptyAudienceBody, headers: Self.key("daily"))
        let newJob = try #require(expired.json?.string("jobId"), "\(expired.text)")
        #expect(expired.status == 202 && newJob != jobID && expired.header("Idempotent-Replayed") == nil)
        // A different request may take an expired key, and the new record holds from then on.
        clock.advance(by: .seconds(600))
        let reused = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody.replacingOccurrences(of: "ARS", with: "XYZ"),
                                     headers: Self.key("daily"))
        #expect(reused.status == 202 && reused.header("Idempotent-Replayed") == nil, "\(reused.text)")
        #expect(try fixture.storedJobIDs().count == 3)
        #expect(try fixture.idempotencyRecordCount() == 1, "the expired record was replaced")
    }
}
