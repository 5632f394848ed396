import APNsMock
import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineTesting

/// Scheduled kickoffs and rollovers together, against the strict mock: a rollover starts only
/// the audiences of kickoffs already sent (never a cancelled one, never one before its `at`),
/// is 409 `no_kickoff` while the channel has none, and a scheduled start carries the time it is
/// sent, which the mock checks (`startTimestampTolerance`).
@Suite("Gateway scheduled kickoffs and rollovers", .heavy)
struct GatewayScheduledRolloverTests {
    static let channel = #"{"id": "club-sched-roll", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#

    static func kickoff(_ team: String, at seconds: Int64? = nil) -> String {
        #"{"audience": {"follows": "team:\#(team)"}, "attributesType": "MatchAttributes", "attributes": \#(GatewayFixture.matchAttributes), "#
            + #""alert": {"title": "Kick-off \#(team)", "body": "ARS v CHE"}\#(seconds.map { #", "at": \#($0)"# } ?? "")}"#
    }

    /// The channel, live, with three followers of each team; returns its APNs id and the tokens by team.
    static func prepare(_ api: GatewayTestClient) throws -> (apnsID: String, ars: [String], che: [String]) {
        let created = try api.request("POST", "/v1/channels", json: channel)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        let ars = (0..<3).map(GatewayPersonalAPITests.token), che = (3..<6).map(GatewayPersonalAPITests.token)
        for (n, token) in ars.enumerated() { try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "ars-\(n)", on: api) }
        for (n, token) in che.enumerated() { try GatewayDeadLetterTests.register(token, follows: "team:CHE", user: "che-\(n)", on: api) }
        #expect(try api.request("POST", "/v1/channels/club-sched-roll/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        return (apnsID, ars, che)
    }

    static func starts(into apnsID: String? = nil, in mock: MockAPNsServer) -> [MockAPNsRecordedRequest] {
        mock.recordedRequests().filter { request in
            request.endpoint == .device && request.event == "start"
                && (apnsID == nil || (try? JSONParser.parse(request.body)[member: "aps"]?.string("input-push-channel")) == apnsID)
        }
    }

    static func rolledOver(_ api: GatewayTestClient) async throws -> String {
        var shown: JSONValue?
        try await eventually("the rollover over") {
            shown = try? api.request("GET", "/v1/channels/club-sched-roll").json
            return shown?[member: "rollover"]?.integer("generation") == 2 && shown?[member: "rollover"]?.string("stage") == "live"
        }
        return try #require(shown?.string("apnsChannelId"))
    }

    /// Only scheduled or cancelled kickoffs: no audience is known, so no rollover (409), and
    /// nothing is started; a rollover after a kickoff sent starts that one's audience only,
    /// never the cancelled one's nor the one still waiting for its time.
    @Test func aRolloverStartsOnlyKickoffsAlreadySent() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let (_, ars, che) = try Self.prepare(api)
        let now = Int64(Date().timeIntervalSince1970)
        let cancelled = try #require(try api.request("POST", "/v1/channels/club-sched-roll/start", json: Self.kickoff("ARS", at: now + 600)).json?.string("jobId"))
        let waiting = try api.request("POST", "/v1/channels/club-sched-roll/start", json: Self.kickoff("ARS", at: now + 900))
        #expect(waiting.status == 202, "\(waiting.text)")
        #expect(try api.request("DELETE", "/v1/channels/club-sched-roll/starts/\(cancelled)").status == 200)

        let refused = try api.request("POST", "/v1/channels/club-sched-roll/rollover")
        #expect(refused.status == 409 && refused.errorCode == "no_kickoff", "\(refused.text)")
        #expect(try api.request("GET", "/v1/channels/club-sched-roll").json?[member: "rollover"]?[member: "audiences"] == [])

        let sent = try api.request("POST", "/v1/channels/club-sched-roll/start", json: Self.kickoff("CHE"))
        _ = try await GatewayDeadLetterTests.finished(try #require(sent.json?.string("jobId")), on: api)
        #expect(try api.request("GET", "/v1/channels/club-sched-roll").json?[member: "rollover"]?[member: "audiences"] == ["team:CHE"])
        #expect(try api.request("POST", "/v1/channels/club-sched-roll/rollover").status == 202)
        let successor = try await Self.rolledOver(api)

        // Live once its start jobs are stored; their starts follow.
        try await eventually("the rollover's starts of the sent kickoff's audience") {
            Set(Self.starts(into: successor, in: fixture.mock).compactMap(\.deviceToken)) == Set(che)
        }
        let restarts = Self.starts(into: successor, in: fixture.mock)
        #expect(restarts.count == che.count, "\(restarts.count) starts on the successor")
        #expect(Self.starts(in: fixture.mock).filter { ars.contains($0.deviceToken ?? "") }.isEmpty,
                "neither the cancelled kickoff nor the one waiting for its time started anyone")
    }

    /// A start scheduled before a rollover is neither cancelled with the previous APNs channel
    /// nor sent into it: it waits, listed, and at its time starts its followers on the successor.
    @Test func aStartScheduledAcrossARolloverStartsOnTheSuccessor() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let (original, ars, _) = try Self.prepare(api)
        let sent = try api.request("POST", "/v1/channels/club-sched-roll/start", json: Self.kickoff("CHE"))
        _ = try await GatewayDeadLetterTests.finished(try #require(sent.json?.string("jobId")), on: api)
        let at = Int64(Date().timeIntervalSince1970) + 4
        let scheduled = try #require(try api.request("POST", "/v1/channels/club-sched-roll/start", json: Self.kickoff("ARS", at: at)).json?.string("jobId"))
        #expect(try api.request("POST", "/v1/channels/club-sched-roll/rollover").status == 202)
        let successor = try await Self.rolledOver(api)
        #expect(fixture.mock.channels()[original] == nil, "the previous channel is deleted")
        let listed = try api.request("GET", "/v1/channels/club-sched-roll/starts").json?[member: "starts"]
        #expect(listed == [["jobId": .string(scheduled), "at": .integer(at), "audience": ["follows": "team:ARS"]]], "\(String(describing: listed))")

        let progress = try await GatewayDeadLetterTests.finished(scheduled, on: api)
        #expect(progress?.integer("sent") == 3, "\(String(describing: progress))")
        #expect(Set(Self.starts(into: successor, in: fixture.mock).compactMap(\.deviceToken)).isSuperset(of: ars))
        #expect(Self.starts(into: original, in: fixture.mock).filter { ars.contains($0.deviceToken ?? "") }.isEmpty)
    }

    /// A scheduled kickoff becomes the channel's audience when its time comes, also after a
    /// restart in between, and a rollover then starts it again; its starts carry the time they
    /// are sent, which the mock holds them to (two seconds of tolerance: stamped when scheduled,
    /// they arrived five seconds old and were refused).
    @Test func aScheduledStartIsStampedWhenSentAndJoinsTheRolloversAudience() async throws {
        let apns = try MockAPNsFixture { $0.startTimestampTolerance = .seconds(2) }
        let data = apns.directory + "/data"
        let first = try GatewayFixture(apns: apns.gatewaySettings, directory: data)
        let (_, ars, _) = try Self.prepare(first.admin)
        let at = Int64(Date().timeIntervalSince1970) + 5
        let job = try #require(try first.admin.request("POST", "/v1/channels/club-sched-roll/start", json: Self.kickoff("ARS", at: at)).json?.string("jobId"))
        await first.shutDown(removingData: false)

        let second = try GatewayFixture(apns: apns.gatewaySettings, directory: data)
        let api = second.admin
        #expect(try api.request("GET", "/v1/channels/club-sched-roll").json?[member: "rollover"]?[member: "audiences"] == [], "not before its time")
        let progress = try await GatewayDeadLetterTests.finished(job, on: api)
        #expect(progress?.integer("sent") == 3, "\(String(describing: progress))")
        let starts = Self.starts(in: apns.mock)
        #expect(starts.count == 3 && starts.allSatisfy { $0.status == 200 }, "\(starts.map { ($0.status, $0.bodyText) })")
        for start in starts {
            let stamp = try #require(try JSONParser.parse(start.body)[member: "aps"]?.integer("timestamp"))
            #expect(stamp >= at, "stamped \(stamp), scheduled for \(at)")
        }
        try await eventually("the started kickoff kept as the channel's audience") {
            (try? api.request("GET", "/v1/channels/club-sched-roll").json?[member: "rollover"]?[member: "audiences"]) == ["team:ARS"]
        }
        #expect(try api.request("POST", "/v1/channels/club-sched-roll/rollover").status == 202)
        let successor = try await Self.rolledOver(api)
        // The rollover is live once its start jobs are stored; their starts follow (under a full
        // run's load, one of three had not arrived yet when this was read at once).
        try await eventually("the rollover's starts of the kickoff's audience") {
            Set(Self.starts(into: successor, in: apns.mock).compactMap(\.deviceToken)) == Set(ars)
        }
        await second.shutDown()
        await apns.shutDown()
    }
}
