import APNs
import APNsMock
import Foundation
import HTTP2
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime

/// The APNs client stack against the strict mock over real TLS and HTTP/2 on loopback.
@Suite(.heavy) struct APNsEndToEndTests {
    @Test func streamLimitRampsFromOneAfterTheFirstAcceptedRequest() async throws {
        let fixture = try MockAPNsFixture()
        defer { Task { await fixture.shutDown() } }
        // Wait for the connection and the mock's initial SETTINGS.
        var before = try await fixture.pushConnectionStats()
        for _ in 0..<200 where before.first?.state != .ready {
            try await Task.sleep(for: .milliseconds(10))
            before = try await fixture.pushConnectionStats()
        }
        #expect(before.first?.remoteMaxConcurrentStreams == 1)

        let pushes = MockAPNsFixture.tokens(300).map {
            LiveActivityPush(deviceToken: $0, payload: MockAPNsFixture.updatePayload(), priority: .powerConsiderate)
        }
        let results = await fixture.sendConcurrently(pushes)
        #expect(results.allSatisfy { (try? $0.get())?.status == 200 })

        let after = try #require(try await fixture.pushConnectionStats().first)
        #expect(after.remoteMaxConcurrentStreams == 1000)
        #expect(after.peakInFlight > 1)
        let counters = fixture.mock.counters()
        #expect(counters.count(endpoint: .device, status: 200) == 300)
        #expect(counters.connectionsAccepted == 3, "one connection each for device pushes, broadcasts and channel management")
        #expect(counters.framesRejected == 0, "the client opened more streams than the server allowed")
    }

    @Test func aThousandConcurrentRequestsShareOneConnection() async throws {
        let fixture = try MockAPNsFixture()
        defer { Task { await fixture.shutDown() } }
        let tokens = MockAPNsFixture.tokens(1000)
        let results = await fixture.sendConcurrently(tokens.map {
            LiveActivityPush(deviceToken: $0, payload: MockAPNsFixture.updatePayload(), priority: .immediate)
        })
        #expect(results.filter { (try? $0.get())?.status == 200 }.count == 1000)
        let stats = try #require(try await fixture.pushConnectionStats().first)
        #expect(stats.completed == 1000)
        #expect(stats.peakInFlight > 100)
        #expect(fixture.mock.counters().connectionsAccepted == 3, "one connection each for device pushes, broadcasts and channel management")
        #expect(Set(fixture.mock.recordedRequests().compactMap(\.deviceToken)) == Set(tokens))
    }

    @Test func goawayInTheMiddleOfAThousandInFlightRequestsLosesNone() async throws {
        let fixture = try MockAPNsFixture { $0.faults.goawayAfterRequests = 250 }
        defer { Task { await fixture.shutDown() } }
        let tokens = MockAPNsFixture.tokens(1000)
        let results = await fixture.sendConcurrently(tokens.map {
            LiveActivityPush(deviceToken: $0, payload: MockAPNsFixture.updatePayload(), priority: .immediate)
        })
        let failures = results.compactMap { result -> String? in
            if case .failure(let error) = result { return "\(error)" } else { return nil }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let counters = fixture.mock.counters()
        // Every push reached APNs exactly once: none lost, none duplicated.
        #expect(counters.count(endpoint: .device, status: 200) == 1000)
        let delivered = fixture.mock.recordedRequests().filter { $0.status == 200 }.compactMap(\.deviceToken)
        #expect(delivered.count == 1000)
        #expect(Set(delivered) == Set(tokens))
        #expect(counters.connectionsAccepted >= 5, "four push connections at least, plus management")
    }

    /// GOAWAYs while requests keep flowing (each answer starts the next send, 32 in flight over
    /// two connections): requests complete out of stream order and keep arriving after the
    /// server decided to go away, yet every push is delivered exactly once and none fails.
    @Test func goawaysUnderAContinuousFlowLoseAndDuplicateNothing() async throws {
        let fixture = try MockAPNsFixture(pushConnections: 2) { $0.faults.goawayAfterRequests = 40 }
        defer { Task { await fixture.shutDown() } }
        let tokens = (0..<400).map { String(repeating: "ef", count: 30) + String(format: "%08x", $0) }
        let client = fixture.client
        let flow = ContinuousFlow()
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            fixture.loop.execute {
                func sendNext() {
                    guard flow.sent < tokens.count else { return }
                    let index = flow.sent
                    flow.sent += 1
                    client.send(LiveActivityPush(deviceToken: tokens[index], payload: MockAPNsFixture.updatePayload(), priority: .immediate)) { result in
                        if case .failure(let error) = result { flow.failures.append("\(error)") }
                        flow.answered += 1
                        if flow.answered == tokens.count { finished.resume() } else { sendNext() }
                    }
                }
                for _ in 0..<32 { sendNext() }
            }
        }
        #expect(flow.failures.isEmpty, "\(flow.failures.prefix(3))")
        let delivered = fixture.mock.recordedRequests().filter { $0.status == 200 }.compactMap(\.deviceToken)
        #expect(delivered.count == tokens.count && Set(delivered) == Set(tokens))
        #expect(fixture.mock.counters().connectionsAccepted >= 10, "the mock went away every 40 requests")
    }

    @Test func unregisteredThrottledAndFailingTokensGetTheirDispositions() async throws {
        let tokens = MockAPNsFixture.tokens(400)
        let dead = Set(tokens.prefix(20))
        let fixture = try MockAPNsFixture {
            $0.faults.unregisteredTokens = dead
            $0.faults.tooManyRequestsRate = 0.1
            $0.faults.internalServerErrorRate = 0.1
            $0.faults.seed = 7
        }
        defer { Task { await fixture.shutDown() } }
        let results = await fixture.sendConcurrently(tokens.map {
            LiveActivityPush(deviceToken: $0, payload: MockAPNsFixture.updatePayload(), priority: .powerConsiderate)
        })
        var byStatus: [Int: Int] = [:]
        for (token, result) in zip(tokens, results) {
            switch result {
            case .success(let response):
                byStatus[response.status, default: 0] += 1
                #expect(!dead.contains(token), "an unregistered token was accepted")
            case .failure(let error):
                let status = try #require(error.status, "no HTTP status in \(error)")
                byStatus[status, default: 0] += 1
                switch status {
                case 410:
                    #expect(error.reason == .unregistered && error.disposition == .tokenDead && dead.contains(token))
                    #expect(error.timestampMilliseconds != nil)
                case 429:
                    #expect(error.reason == .tooManyRequests && error.disposition == .backOffToken)
                case 500:
                    #expect(error.reason == .internalServerError && error.disposition == .retryWithBackoff)
                default:
                    Issue.record("unexpected failure \(error)")
                }
            }
        }
        let counters = fixture.mock.counters()
        #expect(results.count == 400)
        for status in [200, 410, 429, 500] {
            #expect(byStatus[status, default: 0] == counters.count(endpoint: .device, status: status), "status \(status)")
        }
        #expect(byStatus[410, default: 0] > 0 && byStatus[429, default: 0] > 0 && byStatus[500, default: 0] > 0)
        #expect(byStatus.values.reduce(0, +) == 400)
    }

    @Test func providerTokenIsRenewedOnScheduleInVirtualTime() async throws {
        let clock = ManualClock()
        let fixture = try MockAPNsFixture(clientClock: clock) { $0.clock = clock }
        defer { Task { await fixture.shutDown() } }
        let token = MockAPNsFixture.tokens(1)[0]
        func push() async throws -> Int {
            try await fixture.client.send(LiveActivityPush(deviceToken: token, payload: MockAPNsFixture.updatePayload(at: clock.now()),
                                                           priority: .powerConsiderate)).status
        }
        let start = clock.now()
        #expect(try await push() == 200)
        clock.advance(by: .seconds(30 * 60))
        #expect(try await push() == 200)
        clock.advance(by: .seconds(21 * 60))
        #expect(try await push() == 200)

        let authorizations = fixture.mock.recordedRequests().compactMap { request in
            request.headers.first { $0.name == "authorization" }?.value
        }
        #expect(authorizations.count == 3)
        #expect(authorizations[0] == authorizations[1], "renewed before the refresh interval")
        #expect(authorizations[1] != authorizations[2], "not renewed after 51 minutes")
        #expect(fixture.providerToken.issuedAt == UnixTime(seconds: start.seconds + 51 * 60))
        // The renewed token went on new connections, one in each pool of the loop.
        try await eventually("three new connections") { fixture.mock.counters().connectionsAccepted == 6 }
        #expect(fixture.mock.counters().count(endpoint: .device, status: 429, reason: .tooManyProviderTokenUpdates) == 0)
    }

    /// A connection opened late in a token's life (the server sent GOAWAY and a new one took
    /// its place 45 minutes after the token was signed) must not switch to the renewed token a
    /// few minutes later: APNs counts its 20 minutes per connection, from when the connection
    /// first carried a token.
    @Test func aConnectionOpenedLateInATokensLifeIsNotRefusedWhenTheTokenIsRenewed() async throws {
        let clock = ManualClock()
        let fixture = try MockAPNsFixture(clientClock: clock) { configuration in
            configuration.clock = clock
            configuration.faults.goawayAfterRequests = 2
        }
        defer { Task { await fixture.shutDown() } }
        let token = MockAPNsFixture.tokens(1)[0]
        func push() async -> Result<APNsResponse, APNsError> {
            do throws(APNsError) {
                return .success(try await fixture.client.send(LiveActivityPush(deviceToken: token, payload: MockAPNsFixture.updatePayload(at: clock.now()),
                                                                              priority: .powerConsiderate)))
            } catch {
                return .failure(error)
            }
        }
        #expect(try await push().get().status == 200)
        clock.advance(by: .seconds(45 * 60))
        #expect(try await push().get().status == 200, "the first connection's second request, then its GOAWAY")
        #expect(try await push().get().status == 200, "a new connection, with the token signed 45 minutes ago")
        clock.advance(by: .seconds(6 * 60))
        let renewed = await push()
        #expect((try? renewed.get())?.status == 200, "\(renewed)")
        #expect(fixture.mock.counters().count(endpoint: .device, status: 429, reason: .tooManyProviderTokenUpdates) == 0)
    }

    @Test func expiredProviderTokenIsRenewedOnceAndTheRequestRetried() async throws {
        let clientClock = ManualClock()
        let apnsClock = ManualClock()
        let fixture = try MockAPNsFixture(clientClock: clientClock, refreshInterval: .seconds(60 * 60)) { $0.clock = apnsClock }
        defer { Task { await fixture.shutDown() } }
        let token = MockAPNsFixture.tokens(1)[0]
        let payload = MockAPNsFixture.updatePayload()
        #expect(try await fixture.client.send(LiveActivityPush(deviceToken: token, payload: payload, priority: .powerConsiderate)).status == 200)
        // APNs' clock runs 31 minutes ahead of ours: our 30-minute-old token is 61 minutes old there.
        clientClock.advance(by: .seconds(30 * 60))
        apnsClock.advance(by: .seconds(61 * 60))
        #expect(try await fixture.client.send(LiveActivityPush(deviceToken: token, payload: payload, priority: .powerConsiderate)).status == 200)

        let counters = fixture.mock.counters()
        #expect(counters.count(endpoint: .device, status: 403, reason: .expiredProviderToken) == 1)
        #expect(counters.count(endpoint: .device, status: 200) == 2)
        #expect(fixture.providerToken.statistics.clockSkewSuspicions == 1)
    }

    /// APNs's clock runs 45 minutes ahead of ours, so a token is expired for it 15 minutes after
    /// we signed it, and a new one may only be signed 20 minutes after the last (21 with the
    /// safety margin). The request
    /// rejected then and the one sent meanwhile are held, not failed (they came back
    /// `configuration`, so fan-outs dead-lettered them and broadcasts were dropped), and go out
    /// with the new token once the rule allows it; the mock does not see a token change too soon.
    @Test func aClockBehindAPNsHoldsRequestsUntilTheTokenMayBeRenewed() async throws {
        let clock = ManualClock()
        let fixture = try MockAPNsFixture(clientClock: clock) { configuration in
            configuration.clock = clock
            configuration.faults.providerTokenClockOffset = .seconds(45 * 60)
        }
        defer { Task { await fixture.shutDown() } }
        let tokens = MockAPNsFixture.tokens(3)
        let client = fixture.client
        func push(_ token: String) -> LiveActivityPush {
            LiveActivityPush(deviceToken: token, payload: MockAPNsFixture.updatePayload(at: clock.now()), priority: .powerConsiderate)
        }
        #expect(try await client.send(push(tokens[0])).status == 200)
        clock.advance(by: .seconds(16 * 60))
        let (first, second) = (push(tokens[1]), push(tokens[2]))
        let rejected = Task { try await client.send(first).status }
        let meanwhile = Task { try await client.send(second).status }
        let loop = fixture.loop
        let deadline = ContinuousClock.now + .seconds(30)
        while try await loop.submit({ client.heldRequestCount }) < 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await loop.submit { client.heldRequestCount } == 2)
        #expect(fixture.mock.counters().count(endpoint: .device, status: 200) == 1)
        #expect(fixture.providerToken.renewalHold == clock.now() + .seconds(5 * 60))

        clock.advance(by: .seconds(5 * 60))
        #expect(try await rejected.value == 200)
        #expect(try await meanwhile.value == 200)
        let counters = fixture.mock.counters()
        #expect(counters.count(endpoint: .device, status: 200) == 3)
        #expect(counters.count(endpoint: .device, status: 403, reason: .expiredProviderToken) >= 1)
        #expect(counters.count(endpoint: .device, status: 429, reason: .tooManyProviderTokenUpdates) == 0)
        #expect(fixture.providerToken.statistics.tokensSigned == 2 && fixture.providerToken.statistics.renewalHolds == 1)
        #expect(try await loop.submit { client.heldRequestCount } == 0)
    }

    /// A key rotation while a new connection's requests wait for its first answer (APNs allows
    /// one stream until then): the first request signed with the new key renews the connection,
    /// the old one retires and hands its queue back, and those requests go out on the new
    /// connection signed with the new key, like the ones sent after the rotation. (Before, they kept the old key's token: the new connection saw the old
    /// token first and the new one next, and APNs refused the later requests with 429
    /// TooManyProviderTokenUpdates; a gateway's rotation under load dead-lettered 188 starts.)
    @Test func requestsQueuedWhenTheKeyRotatesGoOutSignedWithTheNewKey() async throws {
        let spare = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let next = try MockAPNsProviderKeyFiles.generate(keyID: GatewayKeyRotationTests.nextKeyID, in: spare)
        let fixture = try MockAPNsFixture { configuration in
            configuration.keys.append(.init(keyID: GatewayKeyRotationTests.nextKeyID, path: next.publicKeyFile))
            configuration.faults.latency = .milliseconds(500)
        }
        defer { Task { await fixture.shutDown() } }
        let pushes = MockAPNsFixture.tokens(7).map {
            LiveActivityPush(deviceToken: $0, payload: MockAPNsFixture.updatePayload(), priority: .powerConsiderate)
        }
        async let beforeRotation = fixture.sendConcurrently(Array(pushes.prefix(4)))
        let (connections, token) = (fixture.connections, fixture.providerToken)
        try await eventually("one request in flight and three queued on the connection") {
            let stats = try fixture.loop.sync { UncheckedSendable(connections.stats(of: .device)?.connections.first) }.value
            return stats.map { $0.inFlight == 1 && $0.queued == 3 } ?? false
        }
        let signer = try ProviderTokenSigner(keyFile: next.privateKeyFile, keyID: GatewayKeyRotationTests.nextKeyID, teamID: MockAPNsFixture.teamID)
        try token.replaceKey(with: signer)
        let afterRotation = await fixture.sendConcurrently(Array(pushes.suffix(3)))
        let results = await beforeRotation + afterRotation
        let refused = results.compactMap { result -> String? in
            if case .failure(let error) = result { "\(error)" } else { nil }
        }
        #expect(refused.isEmpty, "\(refused)")
        let keys = fixture.mock.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 }.compactMap(GatewayKeyRotationTests.keyID(of:))
        #expect(keys.filter { $0 == MockAPNsFixture.keyID }.count == 1, "the one in flight at the rotation: \(keys)")
        #expect(keys.filter { $0 == GatewayKeyRotationTests.nextKeyID }.count == 6, "\(keys)")
    }

    @Test func channelLifecycleOnTheManagementHost() async throws {
        let fixture = try MockAPNsFixture { $0.channelLimit = 2 }
        defer { Task { await fixture.shutDown() } }
        let client = fixture.client
        let first = try await client.createChannel(policy: .noStorage)
        let second = try await client.createChannel(policy: .mostRecent)
        #expect(Set(try await client.listChannels()) == [first, second])
        #expect(try await client.readChannel(second).storagePolicy == .mostRecent)
        await #expect(throws: APNsError.self) { try await client.createChannel(policy: .noStorage) }
        do {
            _ = try await client.createChannel(policy: .noStorage)
        } catch {
            #expect(error.reason == .cannotCreateChannelConfig && error.disposition == .configuration)
        }
        #expect(try await client.deleteChannel(first).status == 204)
        #expect(try await client.listChannels() == [second])
        // Broadcast to a no-storage channel must say apns-expiration 0; to a deleted one fails as gone.
        let payload = MockAPNsFixture.updatePayload()
        #expect(try await client.broadcast(Broadcast(channelID: second, payload: payload, priority: .immediate)).status == 200)
        do {
            _ = try await client.broadcast(Broadcast(channelID: first, payload: payload, priority: .immediate))
            Issue.record("broadcast to a deleted channel succeeded")
        } catch {
            #expect(error.reason == .channelNotRegistered && error.disposition == .channelGone)
        }
        let recorded = fixture.mock.recordedRequests().filter { $0.endpoint == .broadcast }
        #expect(recorded.first?.headers.contains { $0.name == "apns-topic" } == false)
    }
}

/// The state of one flow of sends; touched on the fixture's loop only.
private final class ContinuousFlow: @unchecked Sendable {
    var sent = 0
    var answered = 0
    var failures: [String] = []
}
