import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// A personal fan-out through the gateway against a mock that answers a share of requests with
/// 500 `InternalServerError` and 503 `Shutdown`: every target ends sent or dead-lettered after
/// its retries, the counts add up exactly, and no token is accepted twice.
@Suite("Gateway personal pushes under faults", .heavy)
struct GatewayPersonalFaultTests {
    @Test func everyTargetEndsAndTheCountsAddUp() async throws {
        let apns = try MockAPNsFixture { configuration in
            configuration.faults.internalServerErrorRate = 0.2
            configuration.faults.shutdownRate = 0.1
        }
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        let tokens = (0..<30).map(GatewayPersonalAPITests.token)
        try registerFollowers(tokens, api)
        let (_, progress) = try await runStartJob(api)
        let sent = try #require(progress?.integer("sent"))
        var failed: Int64 = 0
        if case .object(let reasons)? = progress?[member: "failed"] {
            for reason in reasons {
                #expect(reason.name == "RetriesExhausted", "only retries can run out here, got \(reason.name)")
                if case .integer(let count) = reason.value { failed += count }
            }
        }
        #expect(progress?.integer("targeted") == 30)
        #expect(sent + failed == 30 && progress?.integer("pending") == 0 && progress?.integer("expired") == 0)

        let device = apns.mock.recordedRequests().filter { $0.endpoint == .device }
        let accepted = device.filter { $0.status == 200 }.compactMap(\.deviceToken)
        #expect(accepted.count == Int(sent))
        #expect(Set(accepted).count == accepted.count, "no token was accepted twice")
        #expect(device.count > accepted.count, "the mock did inject faults")
    }

    /// A 410 list, a 429 rate and a GOAWAY every 40 requests at once: the 410 tokens are
    /// dead-lettered (and deactivated unless registered after APNs' timestamp), throttled and
    /// handed-back requests are sent again, and every target still ends exactly once.
    @Test func unregisteredThrottledAndGoawayTargetsAllEnd() async throws {
        // The mock's list dates its 410s from its start, before these tokens were registered.
        let listed = Set(stride(from: 3, to: 120, by: 10).map(GatewayPersonalAPITests.token))
        let unregisteredLater = Set([7, 77].map(GatewayPersonalAPITests.token))
        let unregistered = listed.union(unregisteredLater)
        let apns = try MockAPNsFixture { configuration in
            configuration.faults.unregisteredTokens = listed
            configuration.faults.tooManyRequestsRate = 0.15
            configuration.faults.goawayAfterRequests = 40
        }
        let quick = PersonalDeliveryPolicy(maxAttempts: 10, retryInitialMilliseconds: 20, retryMaximumMilliseconds: 200,
                                           throttleInitialMilliseconds: 50, throttleMaximumMilliseconds: 400)
        let (fixture, tokens) = try gateway(on: apns, delivery: quick, followers: 120)
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        try await Task.sleep(for: .milliseconds(5))
        for token in unregisteredLater { apns.mock.unregister(token: token) }
        let (jobID, progress) = try await runStartJob(api)
        #expect(progress?.integer("targeted") == 120)
        #expect(progress?.integer("sent") == 120 - Int64(unregistered.count))
        #expect(progress?[member: "failed"] == .object([.init("Unregistered", .integer(Int64(unregistered.count)))]))
        #expect(progress?.integer("pending") == 0 && progress?.integer("expired") == 0)

        let letters = try api.request("GET", "/v1/deadletters?jobId=\(jobID)&limit=1000").json
        guard case .array(let items)? = letters?[member: "deadLetters"] else {
            Issue.record("no dead letters listed: \(String(describing: letters))"); return
        }
        #expect(Set(items.compactMap { $0.string("token") }) == unregistered)
        #expect(items.allSatisfy { $0.string("reason") == "Unregistered" })
        for n in [3, 13, 4, 7, 77] {
            let listed = try api.request("GET", "/v1/tokens?userId=fan-\(n)").json
            guard case .array(let found)? = listed?[member: "tokens"], let record = found.first else {
                Issue.record("no token listed for fan-\(n)"); continue
            }
            #expect(record[member: "active"] == .bool(n % 10 != 7), "token of fan-\(n)")
        }

        let device = apns.mock.recordedRequests().filter { $0.endpoint == .device }
        let accepted = device.filter { $0.status == 200 }.compactMap(\.deviceToken)
        #expect(Set(accepted) == Set(tokens).subtracting(unregistered))
        #expect(accepted.count == Set(accepted).count, "no token was accepted twice")
        #expect(device.contains { $0.status == 429 }, "the mock did throttle")
        #expect(device.count >= 120 + 3, "throttled requests were sent again")
    }

    /// A GOAWAY every two requests per connection: most requests are handed back again and again,
    /// until the pool gives up on them (`retries_exhausted`), yet APNs never processed them. With
    /// one attempt allowed, every target must still be sent: before, each such hand-back used an
    /// attempt and these targets were dead-lettered `RetriesExhausted` without a single answer.
    @Test func handedBackRequestsDoNotUseUpDeliveryAttempts() async throws {
        let apns = try MockAPNsFixture { $0.faults.goawayAfterRequests = 2 }
        let oneAnswer = PersonalDeliveryPolicy(maxAttempts: 1, maxHandBacks: 100, retryInitialMilliseconds: 5,
                                               retryMaximumMilliseconds: 50)
        let (fixture, tokens) = try gateway(on: apns, delivery: oneAnswer, followers: 60)
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        let (_, progress) = try await runStartJob(api)
        #expect(progress?.integer("targeted") == 60)
        #expect(progress?.integer("sent") == 60, "\(String(describing: progress))")
        if case .object(let reasons)? = progress?[member: "failed"] { #expect(reasons.isEmpty, "dead-lettered: \(reasons)") }

        let metrics = try api.request("GET", "/metrics").text
        let exhausted = metricValue(metrics, #"touchline_apns_responses_total{app="default",pool="personal",status="none",reason="retries_exhausted"}"#)
        #expect((exhausted ?? 0) >= 1, "the pool did give requests up after hand-backs")
        let device = apns.mock.recordedRequests().filter { $0.endpoint == .device }
        let accepted = device.filter { $0.status == 200 }.compactMap(\.deviceToken)
        #expect(Set(accepted) == Set(tokens))
        #expect(accepted.count == Set(accepted).count, "no token was accepted twice")
    }

    /// A gateway on `apns` whose personal queue (32 in flight) follows `delivery`, with `followers`
    /// push-to-start tokens registered; returns it and the tokens.
    private func gateway(on apns: MockAPNsFixture, delivery: PersonalDeliveryPolicy, followers: Int) throws -> (GatewayFixture, [String]) {
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data",
                                         personalQueue: PersonalQueueSettings(maxInFlight: 32, delivery: delivery))
        let tokens = (0..<followers).map(GatewayPersonalAPITests.token)
        try registerFollowers(tokens, fixture.admin)
        return (fixture, tokens)
    }

    /// Registers `tokens` as push-to-start tokens of users fan-0, fan-1, ... following team:ARS.
    private func registerFollowers(_ tokens: [String], _ api: GatewayTestClient) throws {
        for (n, token) in tokens.enumerated() {
            #expect(try api.request("POST", "/v1/tokens", json: """
                {"token": "\(token)", "kind": "push-to-start", "userId": "fan-\(n)", "follows": ["team:ARS"]}
                """).status == 201)
        }
    }

    /// Posts the kickoff start to team:ARS and waits for the job to finish: its id and last progress.
    private func runStartJob(_ api: GatewayTestClient) async throws -> (String, JSONValue?) {
        let created = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")
        var progress: JSONValue?
        try await eventually("the job to finish", timeout: .seconds(30)) {
            progress = try? api.request("GET", "/v1/personal/\(jobID)").json
            return progress?.string("status") == "done"
        }
        return (jobID, progress)
    }
}
