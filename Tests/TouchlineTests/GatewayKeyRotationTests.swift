import APNsMock
import Foundation
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Rotating the APNs key without a restart: `POST /v1/apns/key/reload` or SIGHUP reads the
/// configuration again, and the key it names signs the next request's token; a key that cannot
/// be used (unreadable, not a key, another team's) is refused naming why, and the current key stays.
@Suite("APNs key rotation")
struct GatewayKeyRotationTests {
    static let nextKeyID = "TESTKEY002"

    /// The `kid` of the provider token a recorded request carried.
    static func keyID(of request: MockAPNsRecordedRequest) -> String? {
        guard let bearer = request.headers.first(where: { $0.name == "authorization" })?.value,
              let header = bearer.dropFirst("bearer ".count).split(separator: ".").first else { return nil }
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let json = Data(base64Encoded: base64) else { return nil }
        return (try? JSONParser.parse(Array(json)))?.string("kid")
    }

    /// The keys of the broadcasts the mock accepted for `minute`.
    static func keysOfBroadcasts(minute: Int, in mock: MockAPNsServer) -> [String] {
        mock.recordedRequests().filter { $0.endpoint == .broadcast && $0.status == 200 && $0.bodyText.contains(#""minute":\#(minute)"#) }
            .compactMap(keyID(of:))
    }

    @Test(.heavy) func aReloadSignsWithTheNewKeyAndABadOneLeavesTheCurrentKeyInPlace() async throws {
        // The mock knows two keys of the team: the one the gateway starts with and its successor.
        let spare = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let next = try MockAPNsProviderKeyFiles.generate(keyID: Self.nextKeyID, in: spare)
        let apns = try MockAPNsFixture { $0.keys.append(.init(keyID: Self.nextKeyID, path: next.publicKeyFile)) }
        let configured = Mutex(apns.gatewaySettings)
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, reloadedAPNs: { configured.withLock { $0 } })
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-keys", "storagePolicy": "no-storage"}"#).status == 201)
        func push(minute: Int) async throws -> [String] {
            #expect(try api.request("POST", "/v1/channels/club-keys/events", json: #"{"seq": \#(minute), "patch": {"minute": \#(minute)}}"#).status == 202)
            try await eventually("minute \(minute) at APNs") { !Self.keysOfBroadcasts(minute: minute, in: apns.mock).isEmpty }
            return Self.keysOfBroadcasts(minute: minute, in: apns.mock)
        }
        #expect(try await push(minute: 1) == [MockAPNsFixture.keyID])

        // Asked while the configuration still names the key in use: nothing is signed anew.
        let unchanged = try api.request("POST", "/v1/apns/key/reload")
        #expect(unchanged.status == 200 && unchanged.json?[member: "changed"] == .bool(false), "\(unchanged.text)")

        configured.withLock { $0.keyPath = next.privateKeyFile; $0.keyID = Self.nextKeyID }
        let rotated = try api.request("POST", "/v1/apns/key/reload")
        #expect(rotated.status == 200 && rotated.json?.string("keyId") == Self.nextKeyID && rotated.json?[member: "changed"] == .bool(true),
                "\(rotated.text)")
        #expect(try await push(minute: 2) == [Self.nextKeyID], "the next push is signed with the new key, and APNs takes it")

        // Unusable keys are refused, naming why; the key in use stays.
        let garbage = spare + "/AuthKey_TESTKEY003.p8"
        try Data("not a key at all".utf8).write(to: URL(fileURLWithPath: garbage))
        for (settings, named) in [({ (s: inout GatewayConfiguration.APNsSettings) in s.keyPath = garbage; s.keyID = "TESTKEY003" }, garbage),
                                  ({ (s: inout GatewayConfiguration.APNsSettings) in s.keyPath = spare + "/missing.p8" }, spare + "/missing.p8"),
                                  ({ (s: inout GatewayConfiguration.APNsSettings) in s.teamID = "OTHERTEAM1" }, "OTHERTEAM1")] {
            configured.withLock { settings(&$0) }
            let refused = try api.request("POST", "/v1/apns/key/reload")
            #expect(refused.status == 422 && refused.errorCode == "key_reload_refused" && refused.text.contains(named), "\(refused.text)")
            #expect(!refused.text.contains("not a key at all"), "the file's bytes are never echoed")
            configured.withLock { $0.keyPath = next.privateKeyFile; $0.keyID = Self.nextKeyID; $0.teamID = MockAPNsFixture.teamID }
        }
        #expect(try await push(minute: 3) == [Self.nextKeyID])
        // Only an admin key may rotate.
        let club = GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey)
        #expect(try club.request("POST", "/v1/apns/key/reload").status == 403)
    }

    /// Each app's key rotates on its own: `POST /v1/apps/tv/apns/key/reload` moves tv to its new
    /// key while the `default` app keeps signing with its own; a key of another team is refused
    /// for tv and changes nothing of either app; a reload of every app (SIGHUP's) changes only
    /// what the configuration changed.
    @Test(.heavy) func eachAppsKeyRotatesOnItsOwn() async throws {
        let spare = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let tvNextKeyID = "TVKEY00003"
        let next = try MockAPNsProviderKeyFiles.generate(keyID: tvNextKeyID, in: spare)
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: GatewayAppsTests.tvIdentity) { $0.keys.append(.init(keyID: tvNextKeyID, path: next.publicKeyFile)) }
        let tvSettings = Mutex(tv.gatewaySettings)
        let fixture = try GatewayFixture(apns: league.gatewaySettings, configure: { configuration in
            configuration.apps = [.init(name: "tv", apns: tv.gatewaySettings)]
        }, reloadedApps: { [.init(name: "tv", apns: tvSettings.withLock { $0 })] })
        defer { Task { await fixture.shutDown(); await league.shutDown(); await tv.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-keys", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/apps/tv/channels", json: #"{"id": "match-keys", "storagePolicy": "no-storage"}"#).status == 201)
        func push(minute: Int) async throws -> (league: [String], tv: [String]) {
            #expect(try api.request("POST", "/v1/channels/club-keys/events", json: #"{"seq": \#(minute), "patch": {"minute": \#(minute)}}"#).status == 202)
            #expect(try api.request("POST", "/v1/apps/tv/channels/match-keys/events", json: #"{"seq": \#(minute), "patch": {"minute": \#(minute)}}"#).status == 202)
            try await eventually("minute \(minute) at both APNs") {
                !Self.keysOfBroadcasts(minute: minute, in: league.mock).isEmpty && !Self.keysOfBroadcasts(minute: minute, in: tv.mock).isEmpty
            }
            return (Self.keysOfBroadcasts(minute: minute, in: league.mock), Self.keysOfBroadcasts(minute: minute, in: tv.mock))
        }
        #expect(try await push(minute: 1) == ([MockAPNsFixture.keyID], [GatewayAppsTests.tvIdentity.keyID]))

        tvSettings.withLock { $0.keyPath = next.privateKeyFile; $0.keyID = tvNextKeyID }
        let rotated = try api.request("POST", "/v1/apps/tv/apns/key/reload")
        #expect(rotated.status == 200 && rotated.json?.string("app") == "tv" && rotated.json?.string("keyId") == tvNextKeyID
                && rotated.json?[member: "changed"] == .bool(true), "\(rotated.text)")
        #expect(try await push(minute: 2) == ([MockAPNsFixture.keyID], [tvNextKeyID]), "tv signs with its new key, the default app with its own")
        // The default app's reload finds its key unchanged.
        #expect(try api.request("POST", "/v1/apns/key/reload").json?[member: "changed"] == .bool(false))

        // Another team's key is refused for tv; both apps keep their keys.
        tvSettings.withLock { $0.teamID = MockAPNsFixture.teamID }
        let refused = try api.request("POST", "/v1/apps/tv/apns/key/reload")
        #expect(refused.status == 422 && refused.errorCode == "key_reload_refused", "\(refused.text)")
        #expect(!fixture.gateway.reloadAPNsKey(), "a reload of every app changes nothing: tv's refused, the default's the same")
        #expect(try await push(minute: 3) == ([MockAPNsFixture.keyID], [tvNextKeyID]))
        #expect(try api.request("POST", "/v1/apps/radio/apns/key/reload").errorCode == "app_not_found")
    }

    /// A rotation under load against a server that stops answering once a client says GOAWAY
    /// (as some do): hundreds of push-to-starts are in flight on the old connections when the key
    /// changes. The old connections open no new stream, hand their queues to the new ones, wait
    /// for every answer and only then say GOAWAY, so the mock withholds nothing and accepts every
    /// start exactly once. (Before, GOAWAY went first: the mock left the streams in flight
    /// unanswered and the gateway sent them again, 119 starts accepted twice in a run.)
    @Test(.heavy(long: true)) func aRotationUnderLoadAcceptsEveryStartExactlyOnceWhateverTheServerDoesAfterAGoaway() async throws {
        let followers = 800
        let spare = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let next = try MockAPNsProviderKeyFiles.generate(keyID: Self.nextKeyID, in: spare)
        // Each answer waits this long, so a wave of starts stays in flight for it: the test's
        // poll below may be held up for seconds on a loaded machine (a full suite run once saw
        // every start answered before the rotation with 2 s), and must still rotate mid-wave.
        let latency = Duration.seconds(10)
        let apns = try MockAPNsFixture { configuration in
            configuration.keys.append(.init(keyID: Self.nextKeyID, path: next.publicKeyFile))
            configuration.faults.latency = latency
            configuration.faults.silentAfterClientGoaway = true
        }
        let configured = Mutex(apns.gatewaySettings)
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data",
                                         personalQueue: PersonalQueueSettings(maxInFlight: 400), reloadedAPNs: { configured.withLock { $0 } })
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        let tokens = (0..<followers).map(GatewayPersonalAPITests.token)
        for (n, token) in tokens.enumerated() {
            #expect(try api.request("POST", "/v1/tokens", json: """
                {"token": "\(token)", "kind": "push-to-start", "userId": "fan-\(n)", "follows": ["team:ARS"]}
                """).status == 201)
        }
        let accepted: @Sendable () -> [MockAPNsRecordedRequest] = {
            apns.mock.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 }
        }
        let created = try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")

        // The key changes as soon as a few hundred starts are answered (the next wave then waits
        // for its answers), from a thread of its own: on a loaded run this test's task can wait
        // longer than the wave stays in flight for a thread of the task pool (a full run once
        // rotated after every start was answered).
        let (rotatedAt, rotated) = await withCheckedContinuation { (done: CheckedContinuation<(UnixTime, Result<GatewayTestClient.Response, any Error>), Never>) in
            Thread.detachNewThread {
                let deadline = ContinuousClock.now + .seconds(60)
                while accepted().count < 200, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.005) }
                configured.withLock { $0.keyPath = next.privateKeyFile; $0.keyID = Self.nextKeyID }
                let rotatedAt = SystemClock().now()
                done.resume(returning: (rotatedAt, Result { try api.request("POST", "/v1/apns/key/reload") }))
            }
        }
        let reloaded = try rotated.get()
        #expect(reloaded.status == 200 && reloaded.json?[member: "changed"] == .bool(true), "\(reloaded.text)")

        var progress: JSONValue?
        try await eventually("the job to finish", timeout: .seconds(120)) {
            progress = try? api.request("GET", "/v1/personal/\(jobID)").json
            return progress?.string("status") == "done"
        }
        #expect(progress?.integer("sent") == Int64(followers), "\(String(describing: progress))")
        if case .object(let reasons)? = progress?[member: "failed"] { #expect(reasons.isEmpty, "dead-lettered: \(reasons)") }

        let starts = accepted()
        var acceptedPerToken: [String: Int] = [:]
        for request in starts { acceptedPerToken[request.deviceToken ?? "", default: 0] += 1 }
        #expect(Set(acceptedPerToken.keys) == Set(tokens), "every follower was started")
        let twice = acceptedPerToken.filter { $0.value > 1 }
        #expect(twice.isEmpty, "\(twice.count) starts accepted more than once")
        let apnsIDs = starts.compactMap { $0.responseHeader("apns-id") }
        #expect(Set(apnsIDs).count == apnsIDs.count, "no apns-id accepted twice")
        #expect(apns.mock.counters().answersWithheld == 0, "no GOAWAY while a stream was open")
        // The rotation did happen under load: starts of the old key still waited for their
        // answers when the key changed, and the rest went out with the new key.
        let oldKey = starts.filter { Self.keyID(of: $0) == MockAPNsFixture.keyID }
        let inFlightAtRotation = oldKey.filter { rotatedAt - $0.receivedAt < latency }.count
        #expect(inFlightAtRotation >= 100, "only \(inFlightAtRotation) starts were in flight at the rotation")
        #expect(starts.filter { Self.keyID(of: $0) == Self.nextKeyID }.count == followers - oldKey.count)
        #expect(followers - oldKey.count > 0, "some starts went out with the new key")
    }

    @Test(.heavy) func developmentModeHasNoKeyToReload() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        let refused = try fixture.admin.request("POST", "/v1/apns/key/reload")
        #expect(refused.status == 409 && refused.errorCode == "key_reload_unavailable", "\(refused.text)")
    }

    /// `touchline serve` rotates on SIGHUP: the key named by the configuration file is read again.
    @Test(.heavy, .enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func sighupRotatesTheKeyTheConfigurationFileNames() async throws {
        let spare = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let next = try MockAPNsProviderKeyFiles.generate(keyID: Self.nextKeyID, in: spare)
        let apns = try MockAPNsFixture { $0.keys.append(.init(keyID: Self.nextKeyID, path: next.publicKeyFile)) }
        defer { Task { await apns.shutDown() } }
        let settings = apns.gatewaySettings
        let file = spare + "/touchline.json"
        func configure(keyPath: String, keyID: String) throws {
            try Data(#"{"apns": {"keyPath": "\#(keyPath)", "keyID": "\#(keyID)"}}"#.utf8).write(to: URL(fileURLWithPath: file))
        }
        try configure(keyPath: settings.keyPath, keyID: settings.keyID)
        // The key in the file; the rest of the APNs settings as flags (which the file cannot override).
        let flags = apns.serveArguments
        var rest: [String] = []
        var index = 0
        while index < flags.count {
            if flags[index] != "--apns-key", flags[index] != "--apns-key-id" { rest += [flags[index], flags[index + 1]] }
            index += 2
        }
        let serve = try await ServeProcess(dataDirectory: spare + "/data", arguments: ["--config", file] + rest)
        defer { _ = serve.terminate() }
        try configure(keyPath: next.privateKeyFile, keyID: Self.nextKeyID)
        serve.process.signal(SIGHUP)
        try await eventually("the rotation logged") { serve.logLines.contains { $0.contains("APNs key \(Self.nextKeyID) of team") } }
        let api = serve.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-hup", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/club-hup/events", json: #"{"seq": 1, "patch": {"minute": 7}}"#).status == 202)
        try await eventually("the push at APNs") { !Self.keysOfBroadcasts(minute: 7, in: apns.mock).isEmpty }
        #expect(Self.keysOfBroadcasts(minute: 7, in: apns.mock) == [Self.nextKeyID])
        #expect(apns.mock.recordedRequests().filter { $0.endpoint == .createChannel }.compactMap(Self.keyID(of:)) == [Self.nextKeyID])
    }
}
