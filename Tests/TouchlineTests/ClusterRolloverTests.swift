import APNsMock
import Foundation
import NATSServers
import Testing
import TestSlots
import Touchline
import TouchlineCore

/// The rollover past the 8-hour limit on a cluster: asked through a gateway that does not own the
/// channel, run by the one that does (its start jobs in the cluster's job bucket, slices on both
/// gateways), and, when the owner leaves in the middle of it, finished by the next owner from the
/// saved step (docs/cluster.md, "Rollovers on the cluster"). On the in-memory cluster, but for
/// the rollover finished by the next owner, on a real 3-node cluster.
@Suite("Rollovers on a cluster")
struct ClusterRolloverTests {
    static let channel = #"{"id": "k-long", "storagePolicy": "no-storage", "policy": {"maximumActivityAgeSeconds": 600}, "attributes": \#(GatewayFixture.matchAttributes)}"#

    /// The gateway serving the channel's partition now, and the other one.
    static func owner(of channelID: String, among gateways: [GatewayFixture]) throws -> (owner: GatewayFixture, other: GatewayFixture) {
        let partition = Int64(ChannelPartitioning(count: ClusterGatewayTests.partitions)!.partition(of: channelID))
        for (index, gateway) in gateways.enumerated() {
            let ready = try gateway.patientAdmin.request("GET", "/readyz").json
            if case .array(let served)? = ready?[member: "cluster"]?[member: "servedPartitions"], served.contains(.integer(partition)) {
                return (gateway, gateways[1 - index])
            }
        }
        throw ClusterPersonalJobTests.Failure("no gateway serves partition \(partition)")
    }

    /// Two gateways, a match kicked off to both teams' followers: a rollover asked through the
    /// gateway that does not own the channel creates the successor, starts all five followers on
    /// it once with the current state, ends the previous activities at priority 10 and deletes
    /// the previous channel, whichever gateway each start job's slices ran on.
    @Test(.heavy) func aRolloverAskedOfAnyGatewayRunsAtTheChannelsOwner() async throws {
        let cluster = try await ClusterUnderTest.start(.inMemory)
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns)
        let created = try gateways[0].patientAdmin.request("POST", "/v1/channels", json: Self.channel)
        let original = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        let (owner, other) = try Self.owner(of: "k-long", among: gateways)
        let api = other.patientAdmin
        let fans = ClusterPersonalJobTests.tokens(5)
        try ClusterPersonalJobTests.register(Array(fans.prefix(3)), through: api)
        for token in fans.suffix(2) {
            let registered = try api.request("POST", "/v1/tokens", json: #"{"token": "\#(token)", "kind": "push-to-start", "follows": ["team:CHE"]}"#)
            #expect(registered.status == 201, "\(registered.text)")
        }
        try await ClusterPersonalJobTests.copiesAgree(gateways.map(\.patientAdmin))
        for team in ["ARS", "CHE"] {
            let kickoff = try api.request("POST", "/v1/channels/k-long/start", json: GatewayKickoffTests.startBody.replacingOccurrences(of: "team:ARS", with: "team:\(team)"))
            _ = try await GatewayDeadLetterTests.finished(try #require(kickoff.json?.string("jobId"), "\(kickoff.text)"), on: api)
        }
        #expect(try api.request("POST", "/v1/channels/k-long/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        #expect(try api.request("POST", "/v1/channels/k-long/events", json: #"{"seq": 2, "type": "goal", "team": "home", "player": "Saka", "minute": 3}"#).status == 202)
        try await eventually("the goal at APNs") { GatewayRolloverTests.broadcasts(on: original, in: apns.mock).contains { GatewayRolloverTests.homeScore(of: $0) == 1 } }

        let asked = try api.request("POST", "/v1/channels/k-long/rollover")
        #expect(asked.status == 202, "\(asked.text)")
        var shown: JSONValue?
        try await eventually("the rollover over") {
            shown = try? api.request("GET", "/v1/channels/k-long").json
            return shown?[member: "rollover"]?.integer("generation") == 2 && shown?[member: "rollover"]?.string("stage") == "live"
        }
        let successor = try #require(shown?.string("apnsChannelId"))
        #expect(successor != original)
        try await eventually("the five starts on the successor") { Self.starts(into: successor, in: apns.mock).count >= 5 }
        let restarts = Self.starts(into: successor, in: apns.mock)
        #expect(Set(restarts.compactMap(\.deviceToken)) == Set(fans) && restarts.count == 5, "\(restarts.count) starts on the successor")
        let end = try #require(GatewayRolloverTests.broadcasts(on: original, in: apns.mock).last)
        #expect(end.event == "end" && end.priority == 10 && GatewayRolloverTests.homeScore(of: end) == 1, "\(end.bodyText)")
        #expect(apns.mock.channels()[original] == nil && apns.mock.channels()[successor] != nil)
        // The next goal goes to the successor, from the owner.
        #expect(try owner.patientAdmin.request("POST", "/v1/channels/k-long/events", json: #"{"seq": 3, "type": "goal", "team": "away", "minute": 9}"#).status == 202)
        try await eventually("the next goal on the successor") {
            GatewayRolloverTests.broadcasts(on: successor, in: apns.mock).contains { GatewayRolloverTests.homeScore(of: $0, "awayScore") == 1 }
        }
    }

    /// The owner leaves while APNs refuses the successor (its channel limit is reached): the
    /// other gateway takes the channel up with the rollover's saved step and completes it once
    /// APNs has room, starting the audience once.
    @Test(.heavy(weight: 3)) func theNextOwnerCompletesARolloverTheLastOneLeftHalfDone() async throws {
        let cluster = try await ClusterUnderTest.start(.servers)
        // Room for two channels: the match and one more, which a blocker takes first.
        let apns = try MockAPNsFixture { $0.channelLimit = 2 }
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns)
        let created = try gateways[0].patientAdmin.request("POST", "/v1/channels", json: Self.channel)
        let original = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        #expect(try gateways[0].patientAdmin.request("POST", "/v1/channels", json: #"{"id": "blocker", "storagePolicy": "no-storage"}"#).status == 201)
        let (owner, other) = try Self.owner(of: "k-long", among: gateways)
        let api = other.patientAdmin
        let fans = ClusterPersonalJobTests.tokens(3)
        try ClusterPersonalJobTests.register(fans, through: api)
        try await ClusterPersonalJobTests.copiesAgree(gateways.map(\.patientAdmin))
        let kickoff = try api.request("POST", "/v1/channels/k-long/start", json: GatewayKickoffTests.startBody)
        _ = try await GatewayDeadLetterTests.finished(try #require(kickoff.json?.string("jobId"), "\(kickoff.text)"), on: api)
        #expect(try api.request("POST", "/v1/channels/k-long/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)

        #expect(try api.request("POST", "/v1/channels/k-long/rollover").status == 202)
        try await eventually("the successor refused at least once") {
            apns.mock.recordedRequests().contains { $0.endpoint == .createChannel && $0.status != 200 }
        }
        #expect(try api.request("GET", "/v1/channels/k-long").json?[member: "rollover"]?.string("stage") == "creatingSuccessor")
        await owner.shutDown(removingData: false)
        // Answered 503 `channel_moving` until the remaining gateway has taken the partitions up.
        try await eventually("the blocker deleted") { (try? api.request("DELETE", "/v1/channels/blocker").status) == 200 }
        var shown: JSONValue?
        try await eventually("the rollover completed by the next owner", timeout: .seconds(45)) {
            shown = try? api.request("GET", "/v1/channels/k-long").json
            return shown?[member: "rollover"]?.integer("generation") == 2 && shown?[member: "rollover"]?.string("stage") == "live"
        }
        let successor = try #require(shown?.string("apnsChannelId"))
        try await eventually("the three starts on the successor") { Self.starts(into: successor, in: apns.mock).count >= 3 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(Self.starts(into: successor, in: apns.mock).count == 3, "each fan started once on the successor")
        #expect(apns.mock.channels()[original] == nil && apns.mock.channels()[successor] != nil)
    }

    /// A kickoff scheduled in the cluster's job bucket before a rollover is moved with the
    /// channel: it is not cancelled with the previous APNs channel, and at its time its slices
    /// start the followers on the successor, stamped when sent.
    @Test(.heavy) func aStartScheduledAcrossARolloverStartsOnTheSuccessor() async throws {
        let cluster = try await ClusterUnderTest.start(.inMemory)
        let apns = try MockAPNsFixture { $0.startTimestampTolerance = .seconds(5) }
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns)
        let api = gateways[0].patientAdmin
        let original = try #require(try api.request("POST", "/v1/channels", json: Self.channel).json?.string("apnsChannelId"))
        let fans = ClusterPersonalJobTests.tokens(4)
        try ClusterPersonalJobTests.register(Array(fans.prefix(2)), through: api)
        for token in fans.suffix(2) {
            let registered = try api.request("POST", "/v1/tokens", json: #"{"token": "\#(token)", "kind": "push-to-start", "follows": ["team:CHE"]}"#)
            #expect(registered.status == 201, "\(registered.text)")
        }
        try await ClusterPersonalJobTests.copiesAgree(gateways.map(\.patientAdmin))
        let sent = try api.request("POST", "/v1/channels/k-long/start", json: GatewayKickoffTests.startBody.replacingOccurrences(of: "team:ARS", with: "team:CHE"))
        _ = try await GatewayDeadLetterTests.finished(try #require(sent.json?.string("jobId"), "\(sent.text)"), on: api)
        #expect(try api.request("POST", "/v1/channels/k-long/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        let at = Int64(Date().timeIntervalSince1970) + 10
        let scheduled = try #require(try api.request("POST", "/v1/channels/k-long/start", json: GatewayScheduledKickoffTests.body(at: at)).json?.string("jobId"))

        #expect(try api.request("POST", "/v1/channels/k-long/rollover").status == 202)
        var successor: String?
        try await eventually("the rollover over") {
            let shown = try? api.request("GET", "/v1/channels/k-long").json
            successor = shown?.string("apnsChannelId")
            return shown?[member: "rollover"]?.integer("generation") == 2 && shown?[member: "rollover"]?.string("stage") == "live"
        }
        let next = try #require(successor)
        #expect(apns.mock.channels()[original] == nil)
        let progress = try await GatewayDeadLetterTests.finished(scheduled, on: api)
        #expect(progress?.integer("sent") == 2, "\(String(describing: progress))")
        let arsStarts = Self.starts(into: next, in: apns.mock).filter { fans.prefix(2).contains($0.deviceToken ?? "") }
        #expect(arsStarts.count == 2 && arsStarts.allSatisfy { $0.receivedAt >= UnixTime(seconds: at) }, "\(arsStarts.count) starts at their time")
    }

    static func starts(into apnsID: String, in mock: MockAPNsServer) -> [MockAPNsRecordedRequest] {
        mock.recordedRequests().filter {
            $0.endpoint == .device && $0.event == "start" && $0.status == 200
                && (try? JSONParser.parse($0.body)[member: "aps"]?.string("input-push-channel")) == apnsID
        }
    }
}
