import APNsMock
import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineTesting

/// Personal pushes through the gateway against its bundled mock APNs: a push-to-start fan-out
/// to the followers of a team with dead tokens among them, the job's progress, and the errors
/// (these in process on the in-memory backends).
@Suite("Gateway personal pushes API", .gatewaysInProcess)
struct GatewayPersonalAPITests {
    static func token(_ n: Int) -> String { String(repeating: "cd", count: 30) + String(format: "%08x", n) }

    static let startBody = """
        {"audience": {"follows": "team:ARS"}, "event": "start", "contentState": {"homeScore": 0, "awayScore": 0},
         "alert": {"title": "Kick-off", "body": "ARS v CHE"}, "attributesType": "MatchAttributes",
         "attributes": \(GatewayFixture.matchAttributes)}
        """

    @Test(.heavy) func followsJobReachesEveryFollowerAndDeactivatesUnregisteredTokens() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        for n in 0..<50 {
            let registered = try api.request("POST", "/v1/tokens", json: """
                {"token": "\(Self.token(n))", "kind": "push-to-start", "userId": "fan-\(n)", "follows": ["team:ARS"]}
                """)
            #expect(registered.status == 201, "\(registered.text)")
        }
        // Someone who follows another team is not in the audience.
        #expect(try api.request("POST", "/v1/tokens", json: """
            {"token": "\(Self.token(99))", "kind": "push-to-start", "userId": "other", "follows": ["team:CHE"]}
            """).status == 201)
        let dead = Set((0..<5).map { Self.token($0 * 10 + 3) })
        for token in dead { fixture.mock.unregister(token: token) }

        let created = try api.request("POST", "/v1/personal", json: Self.startBody)
        #expect(created.status == 202, "\(created.text)")
        let jobID = try #require(created.json?.string("jobId"))

        var progress: JSONValue?
        try await eventually("the job to finish") {
            progress = try? api.request("GET", "/v1/personal/\(jobID)").json
            return progress?.string("status") == "done"
        }
        #expect(progress?.integer("targeted") == 50)
        #expect(progress?.integer("sent") == 45)
        #expect(progress?[member: "failed"] == .object([.init("Unregistered", .integer(5))]))
        #expect(progress?.integer("expired") == 0)
        #expect(progress?.integer("pending") == 0)

        for n in 0..<50 {
            let listed = try api.request("GET", "/v1/tokens?userId=fan-\(n)").json
            guard case .array(let tokens)? = listed?[member: "tokens"], let record = tokens.first else {
                Issue.record("no token listed for fan-\(n)"); continue
            }
            #expect(record[member: "active"] == .bool(!dead.contains(Self.token(n))), "token of fan-\(n)")
        }

        let accepted = fixture.mock.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 }
        #expect(accepted.count == 45)
        #expect(Set(accepted.compactMap(\.deviceToken)) == Set((0..<50).map(Self.token)).subtracting(dead))
        #expect(Set(accepted.map(\.body)).count == 1, "every token gets the same payload bytes")
        #expect(accepted.allSatisfy { $0.event == "start" && $0.priority == 10 })
        #expect(accepted.first?.bodyText.contains(#""attributes-type":"MatchAttributes""#) == true)
    }

    @Test(.heavy) func tokenJobCarriesPriorityAndExpirationAndAPastExpirationSendsNothing() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let expiration = Int64(Date().timeIntervalSince1970) + 3_600
        let update = try api.request("POST", "/v1/personal", json: """
            {"audience": {"token": "\(Self.token(7).uppercased())"}, "event": "update", "contentState": {"homeScore": 1},
             "priority": 5, "expiration": \(expiration)}
            """)
        #expect(update.status == 202, "\(update.text)")
        let updateID = try #require(update.json?.string("jobId"))
        let stale = try api.request("POST", "/v1/personal", json: """
            {"audience": {"token": "\(Self.token(8))"}, "event": "end", "contentState": {"homeScore": 1}, "expiration": 1}
            """)
        let staleID = try #require(stale.json?.string("jobId"))

        var updated: JSONValue?, expired: JSONValue?
        try await eventually("both jobs to finish") {
            updated = try? api.request("GET", "/v1/personal/\(updateID)").json
            expired = try? api.request("GET", "/v1/personal/\(staleID)").json
            return updated?.string("status") == "done" && expired?.string("status") == "done"
        }
        #expect(updated?.integer("targeted") == 1 && updated?.integer("sent") == 1)
        #expect(expired?.integer("targeted") == 1 && expired?.integer("expired") == 1 && expired?.integer("sent") == 0)

        // A push refused on the way (the mock's stream-limit ramp, say) is sent again: count
        // what APNs accepted, and that nothing at all went to the expired job's token.
        let devices = fixture.mock.recordedRequests().filter { $0.endpoint == .device }
        #expect(!devices.contains { $0.deviceToken == Self.token(8) }, "the expired job sent nothing")
        let accepted = devices.filter { $0.status == 200 }
        #expect(accepted.count == 1, "\(devices.map { "\($0.deviceToken ?? "-") \($0.status)" })")
        let push = try #require(accepted.first)
        #expect(push.deviceToken == Self.token(7) && push.status == 200)
        #expect(push.event == "update" && push.priority == 5)
        #expect(push.header("apns-expiration") == String(expiration))
    }

    @Test func badRequestsAreRefusedNamingTheField() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        func post(_ body: String) throws -> (Int, String) {
            let response = try api.request("POST", "/v1/personal", json: body)
            return (response.status, response.text)
        }
        let cases: [(body: String, field: String)] = [
            (#"{"event": "update", "contentState": {}}"#, "audience"),
            (#"{"audience": {"userId": "u1", "follows": "team:ARS"}, "event": "update", "contentState": {}}"#, "audience"),
            (#"{"audience": {"token": "xyz"}, "event": "update", "contentState": {}}"#, "audience.token"),
            (#"{"audience": {"userId": "u1"}, "event": "begin", "contentState": {}}"#, "event"),
            (#"{"audience": {"userId": "u1"}, "event": "update"}"#, "contentState"),
            (#"{"audience": {"userId": "u1"}, "event": "update", "contentState": []}"#, "contentState"),
            (#"{"audience": {"follows": "team:ARS"}, "event": "start", "contentState": {}, "attributes": {}}"#, "attributesType"),
            (#"{"audience": {"userId": "u1"}, "event": "update", "contentState": {}, "priority": 7}"#, "priority"),
            (#"{"audience": {"userId": "u1"}, "event": "update", "contentState": {}, "expiration": "soon"}"#, "expiration"),
            (#"{"audience": {"userId": "u1"}, "event": "update", "contentState": {}, "alert": {"title": "Goal"}}"#, "alert.body"),
            (#"{"audience": {"follows": "team:ARS"}, "event": "update", "contentState": {}}"#, "audience"),
        ]
        for (body, field) in cases {
            let (status, text) = try post(body)
            #expect(status == 400 && text.contains("'\(field)'"), "\(body) -> \(status) \(text)")
        }
        #expect(try api.request("GET", "/v1/personal/job-nope").errorCode == "job_not_found")
    }

    @Test func providerKeysAreForbidden() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let provider = fixture.client(key: GatewayFixture.clubKey)
        let created = try provider.request("POST", "/v1/personal", json: Self.startBody)
        #expect(created.status == 403 && created.errorCode == "forbidden", "\(created.text)")
        #expect(try provider.request("GET", "/v1/personal/job-1").status == 403)
    }
}
