import ChildProcesses
import APNsMock
import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineTesting

/// The lost 202 itself: `touchline serve` dies right after a fan-out's commit and before its
/// answer (`TOUCHLINE_IDEMPOTENCY_EXIT_AFTER_COMMIT`). The client's retry with the same
/// `Idempotency-Key` against the restarted gateway gets the same job, and APNs sees each
/// follower once: the stored job resumed, the retry created nothing.
@Suite("Gateway idempotency keys across a crash", .heavy)
struct GatewayIdempotencyCrashTests {
    static let audience = 20

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func aRetryAfterACrashBetweenCommitAndReplyGetsTheSameJobAndSendsNothingTwice() async throws {
        let apns = try MockAPNsFixture()
        defer { Task { await apns.shutDown() } }
        let arguments = apns.serveArguments
        let data = apns.directory + "/data"
        let first = try await ServeProcess(dataDirectory: data, arguments: arguments, environment: ["TOUCHLINE_IDEMPOTENCY_EXIT_AFTER_COMMIT": "1"])
        let tokens = (0..<Self.audience).map(GatewayPersonalAPITests.token)
        for token in tokens {
            let registered = try first.admin.request("POST", "/v1/tokens", json: #"{"token": "\#(token)", "kind": "push-to-start", "follows": ["team:ARS"]}"#)
            #expect(registered.status == 201)
        }
        let key = GatewayIdempotencyTests.key("kickoff-ars-2026-01-01")
        #expect(throws: GatewayTestClient.Failure.self, "the gateway died before answering") {
            try first.admin.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody, headers: key)
        }
        #expect(first.process.wait() == .exited(86), "ended by the hook, right after the commit")
        #expect(apns.mock.recordedRequests().filter { $0.endpoint == .device }.isEmpty, "nothing was sent before the crash")

        let second = try await ServeProcess(dataDirectory: data, arguments: arguments)
        let retried = try second.admin.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody, headers: key)
        #expect(retried.status == 202 && retried.header("Idempotent-Replayed") == "true", "\(retried.text)")
        let jobID = try #require(retried.json?.string("jobId"))
        var progress: JSONValue?
        try await eventually("the stored job to finish", timeout: .seconds(60)) {
            progress = try? second.admin.request("GET", "/v1/personal/\(jobID)").json
            return progress?.string("status") == "done"
        }
        #expect(progress?.integer("sent") == Int64(Self.audience))
        // Once more, after the job is done: still the same job, nothing new.
        let late = try second.admin.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody, headers: key)
        #expect(late.json?.string("jobId") == jobID)
        #expect(second.terminate() == 0)

        let sent = apns.mock.recordedRequests().filter { $0.endpoint == .device }.compactMap(\.deviceToken)
        #expect(sent.count == Self.audience && Set(sent) == Set(tokens), "each follower exactly once: \(sent.count) pushes")
    }
}
