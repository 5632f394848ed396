import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineStore
import TouchlineTesting

/// Two apps in one gateway, against two mock APNs of different teams, keys and bundle ids:
/// the `default` app (the `apns` block) and `tv` (`apps`). Each mock checks the JWT against its
/// own team and key, and the topic or bundle path against its own app, as APNs does.
@Suite(.heavy(weight: 2)) struct GatewayAppsTests {
    static let tvIdentity = MockAPNsFixture.Identity(bundleID: "com.example.tv", teamID: "TVTEAM0002", keyID: "TVKEY00002")
    static let tvKey = "tv-secret-0123456789"

    /// A gateway sending the `default` app to `league` and the `tv` app to `tv`, with a key of
    /// each (`club-` channels of `default`, `match-` channels of `tv` whose kickoffs may address the
    /// `team:` topics) and an admin key.
    static func gateway(league: MockAPNsFixture, tv: MockAPNsFixture,
                        tvPersonalQueue: AppPersonalQueueLimits = AppPersonalQueueLimits()) throws -> GatewayFixture {
        try GatewayFixture(apns: league.gatewaySettings) { configuration in
            configuration.apps = [.init(name: "tv", apns: tv.gatewaySettings, personalQueue: tvPersonalQueue)]
            configuration.apiKeys.append(.init(key: tvKey, scope: .channelPrefix("match-"), app: "tv", followTopics: ["team:*"]))
        }
    }

    /// The ids a channel list's page shows.
    static func listedIDs(_ response: GatewayTestClient.Response) -> [String]? {
        guard case .array(let channels)? = response.json?[member: "channels"] else { return nil }
        return channels.compactMap { $0.string("id") }
    }

    static func goals(_ seq: Int) -> String { #"{"seq": \#(seq), "patch": {"minute": \#(seq)}}"# }

    @Test func eachAppsPushesCarryItsOwnTokenTopicAndPathAndKeysStayInTheirApp() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: Self.tvIdentity)
        let fixture = try Self.gateway(league: league, tv: tv)
        defer { Task { await fixture.shutDown(); await league.shutDown(); await tv.shutDown() } }
        let club = GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey)
        let broadcaster = GatewayTestClient(port: fixture.port, key: Self.tvKey)

        let created = try broadcaster.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-1", "storagePolicy": "no-storage"}"#)
        #expect(created.status == 201 && created.json?.string("id") == "match-1" && created.json?.string("app") == "tv", "\(created.text)")
        #expect(try club.request("POST", "/v1/channels", json: #"{"id": "club-1", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try broadcaster.request("POST", "/v1/apps/tv/channels/match-1/events", json: Self.goals(1)).status == 202)
        #expect(try club.request("POST", "/v1/channels/club-1/events", json: Self.goals(2)).status == 202)
        try await eventually("each goal at its app's APNs") {
            !GatewayKeyRotationTests.keysOfBroadcasts(minute: 1, in: tv.mock).isEmpty
                && !GatewayKeyRotationTests.keysOfBroadcasts(minute: 2, in: league.mock).isEmpty
        }
        // Each app's requests went to its own APNs, signed with its own key, for its own bundle.
        for (mock, identity, minute) in [(tv, Self.tvIdentity, 1), (league, MockAPNsFixture.Identity(), 2)] {
            let requests = mock.mock.recordedRequests()
            #expect(requests.allSatisfy { $0.status < 300 }, "\(requests.filter { $0.status >= 300 }.map { "\($0.status) \($0.detail ?? "")" })")
            #expect(Set(requests.compactMap(GatewayKeyRotationTests.keyID(of:))) == [identity.keyID])
            #expect(requests.filter { $0.endpoint == .broadcast }.allSatisfy { $0.path.contains("/apps/\(identity.bundleID)") })
            #expect(requests.filter { $0.endpoint == .createChannel }.count == 1)
            #expect(GatewayKeyRotationTests.keysOfBroadcasts(minute: 3 - minute, in: mock.mock).isEmpty, "the other app's goal never came here")
        }

        // Keys stay in their app, and the 403 names the scope.
        let crossed = try club.request("GET", "/v1/apps/tv/channels/match-1")
        #expect(crossed.status == 403 && crossed.text.contains("belongs to app 'default' and may not touch channel 'match-1' of app 'tv'"), "\(crossed.text)")
        let back = try broadcaster.request("POST", "/v1/channels/club-1/events", json: Self.goals(3))
        #expect(back.status == 403 && back.text.contains("belongs to app 'tv' and may not touch channel 'club-1' of app 'default'"), "\(back.text)")
        #expect(try broadcaster.request("POST", "/v1/channels", json: #"{"id": "match-2", "storagePolicy": "no-storage"}"#).status == 403,
                "a tv key creates no channel in the default app")
        // An id holding a decoded '/' never reaches another app's channel.
        #expect(try fixture.admin.request("GET", "/v1/channels/tv%2Fmatch-1").status == 404)
        let unknown = try fixture.admin.request("GET", "/v1/apps/radio/channels")
        #expect(unknown.status == 404 && unknown.json?.string("error") == "app_not_found", "\(unknown.text)")

        // Lists and views show a channel in its app, named as its provider named it.
        #expect(Self.listedIDs(try fixture.admin.request("GET", "/v1/apps/tv/channels")) == ["match-1"])
        #expect(Self.listedIDs(try fixture.admin.request("GET", "/v1/channels")) == ["club-1"])
        #expect(try broadcaster.request("GET", "/v1/apps/tv/channels/match-1/stats").json?.string("app") == "tv")
        let deleted = try broadcaster.request("DELETE", "/v1/apps/tv/channels/match-1")
        #expect(deleted.status == 200 && deleted.json?.string("id") == "match-1", "\(deleted.text)")
        #expect(tv.mock.recordedRequests().filter { $0.endpoint == .deleteChannel }.count == 1)
        #expect(league.mock.recordedRequests().filter { $0.endpoint == .deleteChannel }.isEmpty)
    }

    /// App `tv`'s APNs answers every broadcast 429, then goes away altogether (its connections
    /// die and cannot be made again), while its provider keeps sending; the `default` app's
    /// goals arrive one after another all the while: the apps share no provider token, pool or
    /// queue (a shared pool would hold them behind `tv`'s retries and dead connections).
    @Test func oneAppsThrottledAndDeadAPNsNeverHoldsAnothersGoals() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: Self.tvIdentity) { configuration in
            configuration.faults.tooManyRequestsRate = 1
            configuration.faults.rateEndpoints = [.broadcast]
        }
        let fixture = try Self.gateway(league: league, tv: tv)
        defer { Task { await fixture.shutDown(); await league.shutDown(); await tv.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-1", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-1", "storagePolicy": "no-storage"}"#).status == 201)
        func goal(_ minute: Int) async throws {
            #expect(try api.request("POST", "/v1/channels/club-1/events", json: Self.goals(minute)).status == 202)
            try await eventually("league goal \(minute) at APNs") { !GatewayKeyRotationTests.keysOfBroadcasts(minute: minute, in: league.mock).isEmpty }
        }
        for seq in 1...5 {
            #expect(try api.request("POST", "/v1/apps/tv/channels/match-1/events", json: Self.goals(seq)).status == 202)
        }
        try await eventually("tv's broadcasts throttled") { tv.mock.counters().count(endpoint: .broadcast, status: 429) >= 1 }
        for minute in 101...103 { try await goal(minute) }
        // tv's APNs goes away: its connections die, and every new one is refused.
        tv.mock.stop()
        for seq in 6...20 {
            #expect(try api.request("POST", "/v1/apps/tv/channels/match-1/events", json: Self.goals(seq)).status == 202)
        }
        for minute in 104...108 { try await goal(minute) }
        #expect(tv.mock.counters().count(endpoint: .broadcast, status: 200) == 0, "tv's APNs took none of its broadcasts")
        #expect(league.mock.counters().count(endpoint: .broadcast, status: 429) == 0)
        // Operators see the apps apart: tv's 429s under its own label, its pools not ready, and
        // the gateway still ready (one app's APNs trouble takes no other app out of service).
        // The mock records the last goal before its answer reaches the gateway's counters.
        let leagueAccepted = #"touchline_apns_responses_total{app="default",pool="broadcast",status="200",reason=""}"#
        var metrics = ""
        try await eventually("the league's eight accepted broadcasts counted") {
            metrics = (try? api.request("GET", "/metrics").text) ?? ""
            return metricValue(metrics, leagueAccepted) == 8
        }
        #expect(metricValue(metrics, #"touchline_apns_responses_total{app="tv",pool="broadcast",status="429",reason="TooManyRequests"}"#) ?? 0 >= 1)
        #expect(metricValue(metrics, #"touchline_provider_token_age_seconds{app="tv"}"#) != nil)
        try await eventually("tv's pools reported not ready") {
            guard case .array(let apps)? = (try? api.request("GET", "/readyz"))?.json?[member: "apps"] else { return false }
            return apps.contains { $0.string("app") == "tv" && $0[member: "ready"] == .bool(false) }
        }
        let readiness = try api.request("GET", "/readyz")
        #expect(readiness.status == 200 && readiness.json?.string("status") == "ready", "\(readiness.text)")
        guard case .array(let statsApps)? = try api.request("GET", "/v1/stats").json?[member: "apps"] else { Issue.record("no apps in /v1/stats"); return }
        #expect(statsApps.map { $0.string("app") } == ["default", "tv"])
        #expect(statsApps.map { $0[member: "channels"]?.integer("total") } == [1, 1])
        let tvChannel = try api.request("GET", "/v1/apps/tv/channels/match-1/stats").json
        #expect(tvChannel?[member: "updatePending"] == .bool(true) || tvChannel?[member: "pushInFlight"] == .bool(true),
                "tv's goals wait in its channel: \(String(describing: tvChannel))")
    }

    /// Tokens belong to the app they were registered for: each app's registry routes see its own
    /// tokens only, an update token names a channel of its own app, and each app's personal
    /// pushes select only its own tokens, through its own APNs, and never take another's as given.
    @Test func aTokenRegisteredForOneAppIsNeverPushedThroughAnother() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: Self.tvIdentity)
        let fixture = try Self.gateway(league: league, tv: tv, tvPersonalQueue: AppPersonalQueueLimits(connections: 3))
        defer { Task { await fixture.shutDown(); await league.shutDown(); await tv.shutDown() } }
        let api = fixture.admin
        let (leagueToken, tvToken, tvUpdate) = (String(repeating: "a1", count: 32), String(repeating: "b2", count: 32), String(repeating: "c3", count: 32))
        #expect(try api.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-1", "storagePolicy": "no-storage"}"#).status == 201)
        func register(_ path: String, _ body: String) throws -> GatewayTestClient.Response { try api.request("POST", path, json: body) }
        #expect(try register("/v1/tokens", #"{"token": "\#(leagueToken)", "kind": "push-to-start", "userId": "fan", "follows": ["team:ARS"]}"#).status == 201)
        let tvRegistered = try register("/v1/apps/tv/tokens", #"{"token": "\#(tvToken)", "kind": "push-to-start", "userId": "fan", "follows": ["team:ARS"]}"#)
        #expect(tvRegistered.status == 201 && tvRegistered.json?.string("app") == "tv", "\(tvRegistered.text)")
        let update = try register("/v1/apps/tv/tokens", #"{"token": "\#(tvUpdate)", "kind": "update", "channelId": "match-1", "userId": "fan"}"#)
        #expect(update.status == 201 && update.json?.string("channelId") == "match-1", "\(update.text)")
        // match-1 is tv's: the default app has no such channel.
        let crossed = try register("/v1/tokens", #"{"token": "\#(tvUpdate)", "kind": "update", "channelId": "match-1"}"#)
        #expect(crossed.status == 404 && crossed.json?.string("error") == "channel_not_found", "\(crossed.text)")

        func listed(_ path: String) throws -> [String] {
            guard case .array(let tokens)? = try api.request("GET", path).json?[member: "tokens"] else { return [] }
            return tokens.compactMap { $0.string("token") }
        }
        #expect(try listed("/v1/tokens?userId=fan") == [leagueToken])
        #expect(Set(try listed("/v1/apps/tv/tokens?userId=fan")) == [tvToken, tvUpdate])
        #expect(try api.request("GET", "/v1/apps/radio/tokens?userId=fan").json?.string("error") == "app_not_found")

        // The default app's kickoff-like start reaches its own follower only, through its own APNs.
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: api)
        #expect(job.progress?.integer("targeted") == 1 && job.progress?.integer("sent") == 1, "\(String(describing: job.progress))")
        #expect(league.mock.recordedRequests().filter { $0.endpoint == .device }.compactMap(\.deviceToken) == [leagueToken])
        #expect(tv.mock.recordedRequests().filter { $0.endpoint == .device }.isEmpty)
        // Named as the audience, another app's token is refused rather than sent with the wrong topic.
        let direct = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody.replacingOccurrences(
            of: #"{"follows": "team:ARS"}"#, with: #"{"token": "\#(tvToken)"}"#))
        #expect(direct.status == 422 && direct.json?.string("error") == "token_of_another_app", "\(direct.text)")
        #expect(direct.text.contains("registered for app 'tv'"))

        // tv's own personal push reaches tv's follower only, through tv's APNs (whose mock checks
        // the topic is tv's bundle id), and is tv's to show.
        let created = try api.request("POST", "/v1/apps/tv/personal", json: GatewayPersonalAPITests.startBody)
        let tvJob = try #require(created.json?.string("jobId"), "\(created.text)")
        try await eventually("tv's job done") {
            (try? api.request("GET", "/v1/apps/tv/personal/\(tvJob)").json?.string("status")) == "done"
        }
        let tvProgress = try api.request("GET", "/v1/apps/tv/personal/\(tvJob)").json
        #expect(tvProgress?.integer("targeted") == 1 && tvProgress?.integer("sent") == 1, "\(String(describing: tvProgress))")
        let tvStarts = tv.mock.recordedRequests().filter { $0.endpoint == .device }
        #expect(tvStarts.map(\.deviceToken) == [tvToken] && tvStarts.allSatisfy { $0.status == 200 }, "\(tvStarts.map { "\($0.status) \($0.detail ?? "")" })")
        #expect(league.mock.recordedRequests().filter { $0.endpoint == .device }.compactMap(\.deviceToken) == [leagueToken], "nothing more at the league's APNs")
        #expect(try api.request("GET", "/v1/personal/\(tvJob)").json?.string("error") == "job_not_found", "another app's job is not shown")
        let wrongApp = try api.request("POST", "/v1/apps/tv/personal", json: GatewayPersonalAPITests.startBody.replacingOccurrences(
            of: #"{"follows": "team:ARS"}"#, with: #"{"token": "\#(leagueToken)"}"#))
        #expect(wrongApp.status == 422 && wrongApp.text.contains("registered for app 'default', not 'tv'"), "\(wrongApp.text)")
        // The personal loop's figures reach /metrics with its next published snapshot, which may
        // come after the job's end is readable.
        let tvAccepted = #"touchline_apns_responses_total{app="tv",pool="personal",status="200",reason=""}"#
        try await eventually("tv's accepted start counted") {
            metricValue((try? api.request("GET", "/metrics").text) ?? "", tvAccepted) == 1
        }
        // tv's personal pool has the connections of tv's own personalQueue.
        guard case .array(let pools)? = try api.request("GET", "/readyz").json?[member: "apnsPools"] else { Issue.record("no pools"); return }
        let slots = pools.filter { $0.string("app") == "tv" && $0.string("pool") == "personal" }.map { pool -> Int in
            if case .array(let slots)? = pool[member: "slots"] { slots.count } else { 0 }
        }
        #expect(slots == [3], "\(pools)")

        // Deleting goes through the token's own app.
        #expect(try api.request("DELETE", "/v1/tokens/\(tvToken)").status == 404)
        #expect(try api.request("DELETE", "/v1/apps/tv/tokens/\(tvToken)").status == 200)
    }

    /// A kickoff into an app's channel starts that app's followers only, through its own APNs,
    /// subscribed to the channel; its scheduled starts are listed and cancelled under the app.
    @Test func aKickoffIntoAnAppsChannelStartsThatAppsFollowersOnly() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: Self.tvIdentity)
        let fixture = try Self.gateway(league: league, tv: tv)
        defer { Task { await fixture.shutDown(); await league.shutDown(); await tv.shutDown() } }
        let api = fixture.admin
        let broadcaster = GatewayTestClient(port: fixture.port, key: Self.tvKey)
        let created = try broadcaster.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-1", "storagePolicy": "no-storage"}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        let (leagueFan, tvFan) = (String(repeating: "f6", count: 32), String(repeating: "a7", count: 32))
        #expect(try api.request("POST", "/v1/tokens", json: #"{"token": "\#(leagueFan)", "kind": "push-to-start", "follows": ["team:ARS"]}"#).status == 201)
        #expect(try api.request("POST", "/v1/apps/tv/tokens", json: #"{"token": "\#(tvFan)", "kind": "push-to-start", "follows": ["team:ARS"]}"#).status == 201)

        let started = try broadcaster.request("POST", "/v1/apps/tv/channels/match-1/start", json: GatewayKickoffTests.startBody)
        let jobID = try #require(started.json?.string("jobId"), "\(started.text)")
        try await eventually("the kickoff done") { (try? api.request("GET", "/v1/apps/tv/personal/\(jobID)").json?.string("status")) == "done" }
        let progress = try api.request("GET", "/v1/apps/tv/personal/\(jobID)").text
        let starts = tv.mock.recordedRequests().filter { $0.endpoint == .device }
        #expect(starts.map(\.deviceToken) == [tvFan] && starts.allSatisfy { $0.status == 200 && $0.event == "start" }, "\(progress)")
        let aps = try #require(try starts.first.map { try JSONParser.parse($0.body) }?[member: "aps"])
        #expect(aps.string("input-push-channel") == apnsID)
        #expect(league.mock.recordedRequests().filter { $0.endpoint == .device }.isEmpty)

        // A scheduled start waits under the app, and is cancelled there.
        let at = SystemClock().now().seconds + 3_600
        let scheduled = try broadcaster.request("POST", "/v1/apps/tv/channels/match-1/start",
                                                json: GatewayKickoffTests.startBody.replacingOccurrences(of: #"{"audience""#, with: #"{"at": \#(at), "audience""#))
        let waiting = try #require(scheduled.json?.string("jobId"), "\(scheduled.text)")
        try await eventually("the start listed") {
            guard case .array(let listed)? = (try? broadcaster.request("GET", "/v1/apps/tv/channels/match-1/starts"))?.json?[member: "starts"] else { return false }
            return listed.compactMap { $0.string("jobId") } == [waiting]
        }
        let cancelled = try broadcaster.request("DELETE", "/v1/apps/tv/channels/match-1/starts/\(waiting)")
        #expect(cancelled.status == 200 && cancelled.json?.string("status") == "cancelled", "\(cancelled.text)")
        // The default app's key reaches no tv channel this way.
        #expect(try GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey).request("POST", "/v1/apps/tv/channels/match-1/start",
                                                                                             json: GatewayKickoffTests.startBody).status == 403)
    }

    /// A stored job resumes in its own app's queue after a restart: the `default` queue never
    /// takes another app's job (it would send it with the wrong topic).
    @Test func aStoredJobOfAnAppResumesThroughItsOwnAppAfterARestart() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: Self.tvIdentity)
        defer { Task { await league.shutDown(); await tv.shutDown() } }
        let fan = String(repeating: "e5", count: 32)
        let first = try Self.gateway(league: league, tv: tv)
        #expect(try first.admin.request("POST", "/v1/apps/tv/tokens", json: #"{"token": "\#(fan)", "kind": "push-to-start", "follows": ["team:ARS"]}"#).status == 201)
        let created = try first.admin.request("POST", "/v1/apps/tv/personal", json: GatewayPersonalAPITests.startBody)
        let done = try #require(created.json?.string("jobId"), "\(created.text)")
        try await eventually("the first job done") { (try? first.admin.request("GET", "/v1/apps/tv/personal/\(done)").json?.string("status")) == "done" }
        await first.shutDown(removingData: false)
        // A job of tv stored but not run yet when the gateway stopped.
        let stored = try #require(try SQLiteTokenReader(path: first.directory + "/personal.sqlite").job(id: done))
        #expect(stored.app == "tv")
        let personal = try StoreWriter(path: first.directory + "/personal.sqlite")
        try await personal.submit([.createJob(PersonalJobRecord(id: "tv-open", createdAt: stored.createdAt, audience: stored.audience,
                                                                payload: stored.payload, priority: stored.priority, app: "tv"))])
        personal.close()
        tv.mock.resetRecording()

        let second = try GatewayFixture(apns: league.gatewaySettings, directory: first.directory) { configuration in
            configuration.apps = [.init(name: "tv", apns: tv.gatewaySettings)]
        }
        defer { Task { await second.shutDown() } }
        try await eventually("the stored job resumed") { (try? second.admin.request("GET", "/v1/apps/tv/personal/tv-open").json?.string("status")) == "done" }
        #expect(tv.mock.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 }.map(\.deviceToken) == [fan])
        #expect(league.mock.recordedRequests().filter { $0.endpoint == .device }.isEmpty)
    }

    /// Lost creates are reconciled app by app: each app's `creating` channel adopts an orphan
    /// from its own app's list-all, and a leftover orphan is deleted at its own app's APNs.
    @Test func lostCreatesAreReconciledWithTheirOwnAppsChannels() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: Self.tvIdentity)
        defer { Task { await league.shutDown(); await tv.shutDown() } }
        let data = league.directory + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let store = try StoreWriter(path: data + "/touchline.sqlite")
        for id in ["lost", "tv/lost"] {
            _ = try await store.createChannel(ChannelRecord(id: id, storagePolicy: .mostRecent, status: .creating, createdAt: SystemClock().now()))
        }
        store.close()
        let mostRecent = ChannelStorage.mostRecent.messageStoragePolicy
        let leagueOrphan = try #require(league.mock.createChannel(storagePolicy: mostRecent))
        let tvOrphans = try (0..<2).map { _ in try #require(tv.mock.createChannel(storagePolicy: mostRecent)) }

        let fixture = try GatewayFixture(apns: league.gatewaySettings, directory: data) { configuration in
            configuration.apps = [.init(name: "tv", apns: tv.gatewaySettings)]
        }
        defer { Task { await fixture.shutDown() } }
        try await eventually("both apps reconciled") {
            tv.mock.counters().count(endpoint: .deleteChannel) == 1
                && ["/v1/channels/lost", "/v1/apps/tv/channels/lost"].allSatisfy { (try? fixture.admin.request("GET", $0).json?.string("status")) == "active" }
        }
        let leagueLost = try fixture.admin.request("GET", "/v1/channels/lost").json
        let tvLost = try fixture.admin.request("GET", "/v1/apps/tv/channels/lost").json
        #expect(leagueLost?.string("apnsChannelId") == leagueOrphan && leagueLost?.string("status") == "active", "\(String(describing: leagueLost))")
        let adopted = try #require(tvLost?.string("apnsChannelId"), "\(String(describing: tvLost))")
        #expect(tvOrphans.contains(adopted) && tvLost?.string("status") == "active")
        #expect(tv.mock.channels().keys.filter(tvOrphans.contains) == [adopted], "the other tv orphan deleted at tv's APNs")
        #expect(league.mock.counters().count(endpoint: .deleteChannel) == 0 && league.mock.channels()[leagueOrphan] != nil)
        #expect(league.mock.counters().count(endpoint: .createChannel) == 0 && tv.mock.counters().count(endpoint: .createChannel) == 0,
                "nothing created again: each adopted its own app's orphan")
    }

    /// Apple's channel limit is each app's own: `tv` at its limit is refused another channel
    /// (409 `channel_limit`) while the `default` app still creates; and `tv`'s credentials
    /// refused by its APNs (`InvalidProviderToken`) hold nothing of the `default` app's goals.
    @Test func oneAppsChannelLimitAndRefusedKeyAreItsOwn() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: Self.tvIdentity) { $0.channelLimit = 1 }
        let fixture = try Self.gateway(league: league, tv: tv)
        defer { Task { await fixture.shutDown(); await league.shutDown(); await tv.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-1", "storagePolicy": "no-storage"}"#).status == 201)
        let full = try api.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-2", "storagePolicy": "no-storage"}"#)
        #expect(full.status == 409 && full.json?.string("error") == "channel_limit", "\(full.text)")
        for id in ["club-1", "club-2"] {
            #expect(try api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#).status == 201)
        }

        // This mock knows another key of tv's team only: tv's tokens are refused.
        let spare = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: spare) }
        let other = try MockAPNsProviderKeyFiles.generate(keyID: "TVKEY00009", in: spare)
        let refusing = try MockAPNsFixture(identity: Self.tvIdentity) { $0.keys = [.init(keyID: "TVKEY00009", path: other.publicKeyFile)] }
        let second = try GatewayFixture(apns: league.gatewaySettings) { configuration in
            configuration.apps = [.init(name: "tv", apns: refusing.gatewaySettings)]
        }
        defer { Task { await second.shutDown(); await refusing.shutDown() } }
        let refused = try second.admin.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-1", "storagePolicy": "no-storage"}"#)
        #expect(refused.status == 502 && refused.text.contains("InvalidProviderToken"), "\(refused.text)")
        #expect(try second.admin.request("POST", "/v1/channels", json: #"{"id": "club-9", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try second.admin.request("POST", "/v1/channels/club-9/events", json: Self.goals(77)).status == 202)
        try await eventually("the default app's goal at its APNs") { !GatewayKeyRotationTests.keysOfBroadcasts(minute: 77, in: league.mock).isEmpty }
        let metrics = try second.admin.request("GET", "/metrics").text
        #expect(metricValue(metrics, #"touchline_apns_responses_total{app="tv",pool="management",status="403",reason="InvalidProviderToken"}"#) ?? 0 >= 1)
    }

    /// A single-app gateway's data directory is the `default` app's as it is: adding an app
    /// keeps every channel where it was, and the new app starts empty.
    @Test func aSingleAppDataDirectoryIsTheDefaultAppsWhenAppsAreAdded() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: Self.tvIdentity)
        let single = try GatewayFixture(apns: league.gatewaySettings)
        #expect(try single.admin.request("POST", "/v1/channels", json: #"{"id": "club-kept", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try single.admin.request("POST", "/v1/channels/club-kept/events", json: Self.goals(1)).status == 202)
        await single.shutDown(removingData: false)

        let fixture = try GatewayFixture(apns: league.gatewaySettings, directory: single.directory) { configuration in
            configuration.apps = [.init(name: "tv", apns: tv.gatewaySettings)]
        }
        defer { Task { await fixture.shutDown(); await league.shutDown(); await tv.shutDown() } }
        let kept = try fixture.admin.request("GET", "/v1/channels/club-kept").json
        #expect(kept?.string("status") == "active" && kept?.string("app") == nil, "\(String(describing: kept))")
        #expect(Self.listedIDs(try fixture.admin.request("GET", "/v1/apps/tv/channels")) == [])
        #expect(try fixture.admin.request("POST", "/v1/channels/club-kept/events", json: Self.goals(2)).status == 202)
        try await eventually("the kept channel's goal at the league's APNs") {
            !GatewayKeyRotationTests.keysOfBroadcasts(minute: 2, in: league.mock).isEmpty
        }
        #expect(tv.mock.recordedRequests().isEmpty, "nothing of the default app went to the new app's APNs")
    }
}
