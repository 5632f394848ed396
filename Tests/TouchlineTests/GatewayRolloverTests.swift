import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// The rollover past the 8-hour limit against the strict mock: a successor APNs channel is
/// created, the kickoff's audience is started on it with the current state, the previous
/// channel's activities are ended with the same state (dismissed at once) and the previous
/// channel deleted; later pushes go to the successor; and across a restart the channel keeps
/// its generation. A rollover meeting a failing store runs in process on the in-memory backends,
/// whose store fails on demand.
@Suite("Gateway rollover", .gatewaysInProcess)
struct GatewayRolloverTests {
    static let channel = #"{"id": "club-long", "storagePolicy": "no-storage", "policy": {"maximumActivityAgeSeconds": 600}, "attributes": \#(GatewayFixture.matchAttributes)}"#

    @Test(.heavy) func aRolloverMovesTheMatchToANewChannelAndEndsTheOldActivitiesWithTheSameState() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let first = try GatewayFixture(directory: directory)
        let api = first.admin
        let created = try api.request("POST", "/v1/channels", json: Self.channel)
        let original = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        let rollover = try #require(created.json?[member: "rollover"])
        #expect(rollover.integer("generation") == 1 && rollover.string("stage") == "live" && rollover[member: "audiences"] == .array([]))
        #expect(rollover.integer("dueAt") == (rollover.integer("generationStartedAt") ?? 0) + 600, "\(rollover)")
        let fans = (0..<3).map(GatewayPersonalAPITests.token)
        for (n, token) in fans.enumerated() { try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: api) }
        let rivals = (3..<5).map(GatewayPersonalAPITests.token)
        for (n, token) in rivals.enumerated() { try GatewayDeadLetterTests.register(token, follows: "team:CHE", user: "rival-\(n)", on: api) }

        // Without a kickoff no audience is known: nothing to roll over to.
        let early = try api.request("POST", "/v1/channels/club-long/rollover")
        #expect(early.status == 409 && early.errorCode == "no_kickoff", "\(early.text)")
        // Kicked off once per team: both audiences are carried over.
        for team in ["ARS", "CHE"] {
            let kickoff = try api.request("POST", "/v1/channels/club-long/start", json: GatewayKickoffTests.startBody.replacingOccurrences(of: "team:ARS", with: "team:\(team)"))
            _ = try await GatewayDeadLetterTests.finished(try #require(kickoff.json?.string("jobId")), on: api)
        }
        #expect(try api.request("GET", "/v1/channels/club-long").json?[member: "rollover"]?[member: "audiences"] == ["team:ARS", "team:CHE"])
        #expect(try api.request("POST", "/v1/channels/club-long/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        #expect(try api.request("POST", "/v1/channels/club-long/events", json: #"{"seq": 2, "type": "goal", "team": "home", "player": "Saka", "minute": 3}"#).status == 202)
        try await eventually("the goal at APNs") { Self.broadcasts(on: original, in: first.mock).contains { Self.homeScore(of: $0) == 1 } }

        let started = try api.request("POST", "/v1/channels/club-long/rollover")
        #expect(started.status == 202, "\(started.text)")
        #expect(try api.request("POST", "/v1/channels/club-long/rollover").errorCode == "rollover_in_progress")
        var shown: JSONValue?
        try await eventually("the rollover over") {
            shown = try? api.request("GET", "/v1/channels/club-long").json
            return shown?[member: "rollover"]?.integer("generation") == 2 && shown?[member: "rollover"]?.string("stage") == "live"
        }
        let successor = try #require(shown?.string("apnsChannelId"))
        #expect(successor != original)

        // The audience started again on the successor, with the state of the moment. The rollover
        // is live once its start jobs are stored; the starts follow from the personal queue.
        func restartsOnTheSuccessor() -> [MockAPNsRecordedRequest] {
            first.mock.recordedRequests().filter {
                $0.endpoint == .device && $0.event == "start" && $0.status == 200
                    && (try? JSONParser.parse($0.body)[member: "aps"]?.string("input-push-channel")) == successor
            }
        }
        try await eventually("the audience started on the successor") { restartsOnTheSuccessor().count >= 5 }
        let restarts = restartsOnTheSuccessor()
        #expect(Set(restarts.compactMap(\.deviceToken)) == Set(fans + rivals) && restarts.count == 5, "\(restarts.count) starts on the successor")
        let restart = try #require(try restarts.first.map { try JSONParser.parse($0.body)[member: "aps"] } ?? nil)
        #expect(restart[member: "content-state"]?[member: "homeScore"] == .integer(1) && restart[member: "alert"]?[member: "title"] == "Kick-off")
        // The previous channel's activities ended with the same state, dismissed at once, then it was deleted.
        let end = try #require(Self.broadcasts(on: original, in: first.mock).last)
        let endAPS = try #require(try JSONParser.parse(end.body)[member: "aps"])
        #expect(end.event == "end" && end.priority == 10 && Self.homeScore(of: end) == 1, "\(end.bodyText)")
        #expect(endAPS.integer("dismissal-date") != nil)
        #expect(first.mock.channels()[original] == nil && first.mock.channels()[successor] != nil)

        // What comes next goes to the successor; after a restart the channel is still on it.
        #expect(try api.request("POST", "/v1/channels/club-long/events", json: #"{"seq": 3, "type": "goal", "team": "away", "minute": 9}"#).status == 202)
        try await eventually("the next goal on the successor") { Self.broadcasts(on: successor, in: first.mock).contains { Self.homeScore(of: $0, "awayScore") == 1 } }
        await first.shutDown(removingData: false)
        let second = try GatewayFixture(directory: directory)
        defer { Task { await second.shutDown() } }
        let restored = try second.admin.request("GET", "/v1/channels/club-long").json
        #expect(restored?.string("apnsChannelId") == successor && restored?[member: "rollover"]?.integer("generation") == 2)
        #expect(restored?[member: "rollover"]?[member: "audiences"] == ["team:ARS", "team:CHE"], "the kickoffs are kept for the next rollover")
    }

    /// A rollover asked for while the disk fails is refused (503) and does not begin; one whose
    /// later steps meet a failing disk retries them with back-off and completes once it recovers.
    @Test func aRolloverWaitsForTheStoreAndThenCompletes() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let parts = try #require(fixture.inMemory)
        let apns = try #require(parts.apns.broadcast)
        func creates() -> Int { apns.requests.filter { if case .createChannel = $0 { true } else { false } }.count }
        // The disk under both stores fills and recovers, as with the fault file.
        func disk(full: Bool) {
            for store in [parts.channels, parts.personal] { full ? store.failStorage() : store.restoreStorage() }
        }
        let api = fixture.admin
        let original = try #require(try api.request("POST", "/v1/channels", json: Self.channel).json?.string("apnsChannelId"))
        try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(1), follows: "team:ARS", user: "fan-1", on: api)
        let kickoff = try api.request("POST", "/v1/channels/club-long/start", json: GatewayKickoffTests.startBody)
        _ = try await GatewayDeadLetterTests.finished(try #require(kickoff.json?.string("jobId")), on: api)
        let created = creates()

        // Asked while the disk fails: refused, nothing begun.
        disk(full: true)
        let refused = try api.request("POST", "/v1/channels/club-long/rollover")
        #expect(refused.status == 503 && refused.errorCode == "store_unavailable", "\(refused.text)")
        disk(full: false)
        try await eventually("the store to recover", timeout: .seconds(5)) { (try? api.request("GET", "/readyz", key: .some(nil)).status) == 200 }
        #expect(try api.request("GET", "/v1/channels/club-long").json?[member: "rollover"]?.string("stage") == "live")

        // The disk fails after the rollover is saved: its later saves fail and APNs is not asked
        // past them; once the disk takes writes again, the steps are retried and it completes.
        #expect(try api.request("POST", "/v1/channels/club-long/rollover").status == 202)
        disk(full: true)
        try await Task.sleep(for: .milliseconds(500))
        #expect(creates() <= created + 1)
        disk(full: false)
        var shown: JSONValue?
        try await eventually("the rollover over", timeout: .seconds(20)) {
            shown = try? api.request("GET", "/v1/channels/club-long").json
            return shown?[member: "rollover"]?.integer("generation") == 2 && shown?[member: "rollover"]?.string("stage") == "live"
        }
        #expect(creates() == created + 1, "one successor")
        #expect(apns.channels[original] == nil && shown?.string("apnsChannelId") != original)
    }

    /// A rollover acknowledged just before the gateway stops completes after the restart: each
    /// step was saved before the next began, and the saved one is done again. (APNs answers
    /// slowly here, so the stop comes while the successor's create is out.)
    @Test(.heavy) func anAcknowledgedRolloverCompletesAfterARestart() async throws {
        let apns = try MockAPNsFixture { $0.faults.latency = .milliseconds(200) }
        let data = apns.directory + "/data"
        let first = try GatewayFixture(apns: apns.gatewaySettings, directory: data)
        let api = first.admin
        let original = try #require(try api.request("POST", "/v1/channels", json: Self.channel).json?.string("apnsChannelId"))
        try GatewayDeadLetterTests.register(GatewayPersonalAPITests.token(1), follows: "team:ARS", user: "fan-1", on: api)
        let kickoff = try api.request("POST", "/v1/channels/club-long/start", json: GatewayKickoffTests.startBody)
        _ = try await GatewayDeadLetterTests.finished(try #require(kickoff.json?.string("jobId")), on: api)
        let rolling = try api.request("POST", "/v1/channels/club-long/rollover")
        #expect(rolling.status == 202 && rolling.json?[member: "rollover"]?.string("stage") == "creatingSuccessor", "\(rolling.text)")
        await first.shutDown(removingData: false)

        let second = try GatewayFixture(apns: apns.gatewaySettings, directory: data)
        var shown: JSONValue?
        try await eventually("the rollover over after the restart") {
            shown = try? second.admin.request("GET", "/v1/channels/club-long").json
            return shown?[member: "rollover"]?.integer("generation") == 2 && shown?[member: "rollover"]?.string("stage") == "live"
        }
        let successor = try #require(shown?.string("apnsChannelId"))
        #expect(successor != original && apns.mock.channels()[original] == nil && apns.mock.channels()[successor] != nil)
        let starts = apns.mock.recordedRequests().filter { $0.endpoint == .device && $0.event == "start" && $0.status == 200 }
        #expect(starts.filter { (try? JSONParser.parse($0.body)[member: "aps"]?.string("input-push-channel")) == successor }.count == 1,
                "the audience started on the successor, once")
        await second.shutDown()
        await apns.shutDown()
    }

    @Test func rolloversAreRefusedWhereTheyCannotRun() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-trial", "storagePolicy": "no-storage", "shadow": true}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/club-trial/rollover").errorCode == "shadow_channel")
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-over", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/club-over/end", json: "{}").status == 202)
        #expect(try api.request("POST", "/v1/channels/club-over/rollover").errorCode == "channel_not_active")
        let tooLong = try api.request("POST", "/v1/channels", json: #"{"id": "club-x", "storagePolicy": "no-storage", "policy": {"maximumActivityAgeSeconds": 28800}}"#)
        #expect(tooLong.status == 400 && tooLong.text.contains("maximumActivityAgeSeconds"), "\(tooLong.text)")
    }

    static func broadcasts(on apnsID: String, in mock: MockAPNsServer) -> [MockAPNsRecordedRequest] {
        mock.recordedRequests().filter { $0.endpoint == .broadcast && $0.channelID == apnsID && $0.status == 200 }
    }

    static func homeScore(of request: MockAPNsRecordedRequest, _ member: String = "homeScore") -> Int64? {
        (try? JSONParser.parse(request.body)[member: "aps"]?[member: "content-state"]?.integer(member)) ?? nil
    }
}
