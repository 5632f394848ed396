import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineStore
import TouchlineTesting

/// Dead letters through the gateway against a mock APNs: permanent failures are listed with
/// paging and filters, and a replay creates new jobs, marks the letters `replayed` in the same
/// commit, and its sends reach APNs once the cause is fixed. Listing and refusals run in process
/// on the in-memory backends, whose APNs refuses the bad tokens as the mock does.
@Suite("Gateway dead letters", .gatewaysInProcess)
struct GatewayDeadLetterTests {
    /// A well-formed token that the mock answers 400 `BadDeviceToken` once disowned (a token of
    /// the other environment): the registry takes it, APNs refuses it.
    static func badToken(_ n: Int) -> String { String(repeating: "e", count: 56) + String(format: "%08x", n) }

    /// Makes the fixture's APNs refuse `badToken(n)` for each n with 400 `BadDeviceToken`: the
    /// mock, or in process the in-memory APNs (which then answers every other push 200).
    static func disownBadTokens(_ numbers: [Int], on fixture: GatewayFixture) {
        let disowned = Set(numbers.map(badToken))
        guard let inMemory = fixture.inMemory?.apns.personal else {
            for token in disowned { fixture.mock.disown(token: token) }
            return
        }
        inMemory.script { request in
            guard case .push(let push) = request, disowned.contains(push.deviceToken) else { return nil }
            return .failure(InMemoryAPNs.rejection(status: 400, reason: "BadDeviceToken", endpoint: .device))
        }
    }

    static func register(_ token: String, follows: String, user: String, on api: GatewayTestClient) throws {
        let registered = try api.request("POST", "/v1/tokens", json: """
            {"token": "\(token)", "kind": "push-to-start", "userId": "\(user)", "follows": ["\(follows)"]}
            """)
        #expect(registered.status == 201, "\(registered.text)")
    }

    /// Posts a personal job and waits until it is done; returns its id and final progress.
    static func runJob(_ body: String, on api: GatewayTestClient) async throws -> (id: String, progress: JSONValue?) {
        let created = try api.request("POST", "/v1/personal", json: body)
        let id = try #require(created.json?.string("jobId"), "\(created.text)")
        let progress = try await finished(id, on: api)
        return (id, progress)
    }

    static func finished(_ jobID: String, on api: GatewayTestClient, timeout: Duration = .seconds(30)) async throws -> JSONValue? {
        var progress: JSONValue?
        do {
            try await eventually("job \(jobID) to finish", timeout: timeout) {
                progress = try? api.request("GET", "/v1/personal/\(jobID)").json
                return progress?.string("status") == "done"
            }
        } catch {
            // What the job showed last says where it stopped (counts, status, broken).
            throw GatewayTestClient.Failure(description: "\(error); it showed \(progress.map { String(decoding: $0.encoded, as: UTF8.self) } ?? "nothing")")
        }
        return progress
    }

    static func letters(_ response: GatewayTestClient.Response) -> [JSONValue] {
        if case .array(let items)? = response.json?[member: "deadLetters"] { return items }
        return []
    }

    @Test func permanentFailuresAreListedWithPagingAndFilters() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        for n in 0..<6 { try Self.register(GatewayPersonalAPITests.token(n), follows: "team:ARS", user: "fan-\(n)", on: api) }
        for n in 0..<4 { try Self.register(Self.badToken(n), follows: "team:ARS", user: "bad-\(n)", on: api) }
        Self.disownBadTokens(Array(0..<4) + [9], on: fixture)
        let followers = try await Self.runJob(GatewayPersonalAPITests.startBody, on: api)
        #expect(followers.progress?.integer("sent") == 6)
        #expect(followers.progress?[member: "failed"] == .object([.init("BadDeviceToken", .integer(4))]))
        let single = try await Self.runJob("""
            {"audience": {"token": "\(Self.badToken(9))"}, "event": "update", "contentState": {"homeScore": 1}}
            """, on: api)

        // Every letter, two at a time, in id order, following `next`.
        var pages: [[JSONValue]] = []
        var path = "/v1/deadletters?limit=2"
        while true {
            let page = try api.request("GET", path)
            #expect(page.status == 200, "\(page.text)")
            pages.append(Self.letters(page))
            guard let next = page.json?.integer("next") else { break }
            path = "/v1/deadletters?limit=2&after=\(next)"
        }
        #expect(pages.map(\.count) == [2, 2, 1])
        let all = pages.flatMap { $0 }
        let ids = all.compactMap { $0.integer("id") }
        #expect(ids == ids.sorted() && Set(ids).count == 5)
        #expect(Set(all.compactMap { $0.string("token") }) == Set((0..<4).map(Self.badToken) + [Self.badToken(9)]), "tokens are shown whole")
        #expect(all.allSatisfy { $0.string("reason") == "BadDeviceToken" && $0.string("status") == "dead" && $0.integer("failedAt") != nil })

        let ofFollowers = Self.letters(try api.request("GET", "/v1/deadletters?jobId=\(followers.id)"))
        #expect(ofFollowers.count == 4 && ofFollowers.allSatisfy { $0.string("jobId") == followers.id })
        let ofSingle = Self.letters(try api.request("GET", "/v1/deadletters?jobId=\(single.id)&reason=BadDeviceToken&status=dead"))
        #expect(ofSingle.map { $0.string("token") } == [Self.badToken(9)])
        #expect(Self.letters(try api.request("GET", "/v1/deadletters?reason=BadDeviceToken")).count == 5)
        #expect(Self.letters(try api.request("GET", "/v1/deadletters?reason=Unregistered")).isEmpty)
        #expect(Self.letters(try api.request("GET", "/v1/deadletters?status=replayed")).isEmpty)
        let lastPage = try api.request("GET", "/v1/deadletters?after=\(ids[3])")
        #expect(Self.letters(lastPage).compactMap { $0.integer("id") } == [ids[4]] && lastPage.json?[member: "next"] == nil)

        for (query, name) in [("limit=0", "limit"), ("limit=1001", "limit"), ("after=-1", "after"), ("after=x", "after"),
                              ("status=gone", "status"), ("jobId=", "jobId")] {
            let refused = try api.request("GET", "/v1/deadletters?\(query)")
            #expect(refused.status == 400 && refused.errorCode == "invalid_query" && refused.text.contains("'\(name)'"), "\(query): \(refused.text)")
        }
        let provider = fixture.client(key: GatewayFixture.clubKey)
        let forbidden = try provider.request("GET", "/v1/deadletters")
        #expect(forbidden.status == 403 && forbidden.errorCode == "forbidden" && forbidden.text.contains("admin"), "\(forbidden.text)")
        #expect(try provider.request("POST", "/v1/deadletters/replay", json: #"{"jobId": "x"}"#).status == 403)
        #expect(try api.request("GET", "/v1/deadletters", key: .some(nil)).status == 401)
    }

    @Test func badReplaysAreRefusedNamingTheProblem() async throws {
        let fixture = try GatewayFixture(tier: .inProcess, maxBodyBytes: 1 << 20)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        for n in 0..<2 { try Self.register(Self.badToken(n), follows: "team:ARS", user: "bad-\(n)", on: api) }
        Self.disownBadTokens([0, 1], on: fixture)
        let job = try await Self.runJob(GatewayPersonalAPITests.startBody, on: api)
        let ids = Self.letters(try api.request("GET", "/v1/deadletters")).compactMap { $0.integer("id") }
        #expect(ids.count == 2)

        let tooMany = "[" + (1...10_001).map(String.init).joined(separator: ",") + "]"
        let cases: [(body: String, status: Int, code: String, mentions: String)] = [
            ("{}", 400, "missing_selector", "'ids'"),
            (#"{"limit": 5}"#, 400, "missing_selector", "'jobId'"),
            (#"{"ids": []}"#, 400, "invalid_field", "'ids'"),
            (#"{"ids": [1, "two"]}"#, 400, "invalid_field", "'ids'"),
            (#"{"ids": \#(tooMany)}"#, 400, "invalid_field", "at most 10000"),
            (#"{"ids": [\#(ids[0])], "jobId": "\#(job.id)"}"#, 400, "invalid_field", "'ids'"),
            (#"{"jobId": "\#(job.id)", "limit": 10001}"#, 400, "invalid_field", "'limit'"),
            (#"{"jobId": "\#(job.id)", "expiration": 1}"#, 400, "invalid_field", "'expiration'"),
            (#"{"jobId": "\#(job.id)", "everything": true}"#, 400, "unknown_field", "'everything'"),
            (#"{"jobId": "\#(job.id)", "gateway": "g1"}"#, 400, "invalid_field", "not part of one"),
            (#"{"ids": [\#(ids[0]), 999999]}"#, 404, "dead_letter_not_found", "999999"),
            (#"{"jobId": "job-unknown"}"#, 404, "dead_letter_not_found", "job-unknown"),
            (#"{"jobId": "\#(job.id)", "reason": "Unregistered"}"#, 404, "dead_letter_not_found", "Unregistered"),
        ]
        for (body, status, code, mentions) in cases {
            let response = try api.request("POST", "/v1/deadletters/replay", json: body)
            #expect(response.status == status && response.errorCode == code && response.text.contains(mentions),
                    "\(body.prefix(80)) -> \(response.status) \(response.text.prefix(300))")
        }
        // Nothing above replayed anything.
        #expect(Self.letters(try api.request("GET", "/v1/deadletters?status=dead")).count == 2)
    }

    /// First round against a gateway configured with the wrong bundle id (every push is refused
    /// with `DeviceTokenNotForTopic`); the operator fixes the configuration, restarts, replays.
    @Test(.heavy) func replayAfterTheCauseIsFixedReachesAPNsAndMarksTheLettersReplayed() async throws {
        let apns = try MockAPNsFixture()
        let data = apns.directory + "/data"
        var misconfigured = apns.gatewaySettings
        misconfigured.bundleID = "com.example.wrong"
        let first = try GatewayFixture(apns: misconfigured, directory: data)
        let tokens = (0..<6).map(GatewayPersonalAPITests.token)
        for (n, token) in tokens.enumerated() { try Self.register(token, follows: "team:ARS", user: "fan-\(n)", on: first.admin) }
        let lone = GatewayPersonalAPITests.token(50)
        try Self.register(lone, follows: "team:CHE", user: "lone", on: first.admin)
        let followers = try await Self.runJob(GatewayPersonalAPITests.startBody, on: first.admin)
        #expect(followers.progress?[member: "failed"] == .object([.init("DeviceTokenNotForTopic", .integer(6))]))
        let soon = Int64(Date().timeIntervalSince1970) + 2
        let expiring = try await Self.runJob("""
            {"audience": {"token": "\(lone)"}, "event": "update", "contentState": {"homeScore": 3}, "priority": 5, "expiration": \(soon)}
            """, on: first.admin)
        #expect(expiring.progress?.integer("sent") == 0)
        let firstRound = apns.mock.recordedRequests().filter { $0.endpoint == .device }
        #expect(firstRound.count == 7 && firstRound.allSatisfy { $0.reason == .deviceTokenNotForTopic })
        await first.shutDown(removingData: false)

        let second = try GatewayFixture(apns: apns.gatewaySettings, directory: data)
        defer { Task { await second.shutDown(); await apns.shutDown() } }
        let api = second.admin
        let listed = Self.letters(try api.request("GET", "/v1/deadletters?jobId=\(followers.id)&reason=DeviceTokenNotForTopic"))
        #expect(listed.count == 6)
        // A token deleted from the registry since is skipped by the replay.
        #expect(try api.request("DELETE", "/v1/tokens/\(tokens[5])").status == 200)

        let replay = try api.request("POST", "/v1/deadletters/replay", json: #"{"jobId": "\#(followers.id)"}"#)
        #expect(replay.status == 202, "\(replay.text)")
        #expect(replay.json?.integer("replayed") == 6)
        guard case .array(let jobs)? = replay.json?[member: "jobs"], jobs.count == 1 else { Issue.record("\(replay.text)"); return }
        #expect(jobs[0].string("replayOf") == followers.id && jobs[0].integer("deadLetters") == 6)
        let replayID = try #require(jobs[0].string("jobId"))
        // The 202 comes after the commit that holds both the job and the marks.
        #expect(Self.letters(try api.request("GET", "/v1/deadletters?jobId=\(followers.id)&status=dead")).isEmpty)
        #expect(Self.letters(try api.request("GET", "/v1/deadletters?jobId=\(followers.id)&status=replayed")).count == 6)
        let progress = try await Self.finished(replayID, on: api)
        #expect(progress?.integer("targeted") == 5 && progress?.integer("sent") == 5, "\(String(describing: progress))")

        let accepted = apns.mock.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 }
        #expect(Set(accepted.compactMap(\.deviceToken)) == Set(tokens.prefix(5)) && accepted.count == 5)
        #expect(accepted.allSatisfy { $0.body == firstRound[0].body && $0.event == "start" }, "the original payload, byte for byte")

        // Replaying again: a filter finds nothing left, named ids are refused as replayed.
        let again = try api.request("POST", "/v1/deadletters/replay", json: #"{"jobId": "\#(followers.id)"}"#)
        #expect(again.status == 404 && again.errorCode == "dead_letter_not_found", "\(again.text)")
        let named = try api.request("POST", "/v1/deadletters/replay", json: #"{"ids": [\#(listed[0].integer("id")!)]}"#)
        #expect(named.status == 409 && named.errorCode == "already_replayed", "\(named.text)")

        // The other job's expiration has passed: a replay needs a new one.
        let loneLetter = try #require(Self.letters(try api.request("GET", "/v1/deadletters?jobId=\(expiring.id)")).first?.integer("id"))
        try await eventually("the expiration to pass", timeout: .seconds(5)) { Int64(Date().timeIntervalSince1970) > soon }
        let expired = try api.request("POST", "/v1/deadletters/replay", json: #"{"ids": [\#(loneLetter)]}"#)
        #expect(expired.status == 409 && expired.errorCode == "job_expired" && expired.text.contains(expiring.id), "\(expired.text)")
        let later = Int64(Date().timeIntervalSince1970) + 3_600
        let renewed = try api.request("POST", "/v1/deadletters/replay", json: #"{"ids": [\#(loneLetter)], "expiration": \#(later)}"#)
        #expect(renewed.status == 202, "\(renewed.text)")
        guard case .array(let renewedJobs)? = renewed.json?[member: "jobs"], let renewedID = renewedJobs.first?.string("jobId") else {
            Issue.record("\(renewed.text)"); return
        }
        #expect(try await Self.finished(renewedID, on: api)?.integer("sent") == 1)
        let update = try #require(apns.mock.recordedRequests().last { $0.endpoint == .device && $0.deviceToken == lone })
        #expect(update.status == 200 && update.event == "update" && update.priority == 5)
        #expect(update.header("apns-expiration") == String(later))
    }
}
