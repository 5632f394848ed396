import APNs
import HTTP2
import Testing
import TouchlineCore
import TouchlineRuntime

/// Collects completion results on the loop (loop-confined).
final class Collector<T>: @unchecked Sendable {
    var results: [Result<T, APNsError>] = []
}

/// The APNs client over fake senders on one event loop, on a manual clock (no socket, no
/// process: no heavy slot).
@Suite struct APNsClientTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(UnixTime(seconds: 1_767_225_600))
    let token: ProviderToken
    let environment = APNsEnvironment.custom(pushHost: "127.0.0.1", pushPort: 8443, managementHost: "127.0.0.1", managementPort: 8444)
    let payload = LiveActivityPayload(timestamp: UnixTime(seconds: 1_767_225_600), event: .update, contentState: ["home": 1]).encoded()

    init() throws {
        directory = try TemporaryDirectory()
        let signer = try ProviderTokenSigner(keyFile: TestKeys.p256(in: directory), keyID: keyID, teamID: teamID)
        token = try ProviderToken(signer: signer, clock: clock)
    }

    private func makeClient(loop: EventLoop, push: FakeSender, management: FakeSender? = nil) throws -> APNsClient {
        let configuration = APNsConfiguration(keyPath: "unused", keyID: keyID, teamID: teamID, bundleID: bundleID, environment: environment)
        return try APNsClient(configuration: configuration, providerToken: token, pushSender: push,
                              managementSender: management ?? FakeSender(loop: loop) { _, _ in .failure(.shutdown) }, loop: loop)
    }

    private func push(id: String? = nil) -> LiveActivityPush {
        LiveActivityPush(deviceToken: hexToken, payload: payload, priority: .immediate, apnsID: id)
    }

    private func requests(_ sender: FakeSender) async throws -> [HTTP2Request] {
        try await sender.loop.submit { sender.requests }
    }

    private static let ok = HTTP2Response(status: 200, headers: [HTTP2Header("apns-id", "a-1"), HTTP2Header("apns-unique-id", "u-1")])

    // MARK: - Success

    @Test func aPushCarriesTheSharedTokenIndexed() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, _ in .success(Self.ok) }
            let client = try makeClient(loop: loop, push: sender)
            let response = try await client.send(push())
            #expect(response == APNsResponse(status: 200, apnsID: "a-1", uniqueID: "u-1"))
            let sent = try #require(try await requests(sender).first)
            #expect(sent.path == "/3/device/\(hexToken)")
            #expect(sent.template.authority == "127.0.0.1:8443")
            #expect(fields(sent.headers) == ["apns-priority=10 (indexed)", "authorization=\(try token.current()) (indexed)"])
        }
    }

    @Test func aBroadcastReturnsTheRequestAndUniqueIDs() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { request, _ in
                .success(HTTP2Response(status: 200, headers: [
                    HTTP2Header("apns-request-id", request.headers.value(of: "apns-request-id") ?? "made-up"),
                    HTTP2Header("apns-unique-id", "u-7"),
                ]))
            }
            let client = try makeClient(loop: loop, push: sender)
            let response = try await client.broadcast(Broadcast(channelID: "Y2g=", payload: payload, priority: .powerConsiderate, requestID: "r-7"))
            #expect(response.requestID == "r-7")
            #expect(response.uniqueID == "u-7")
            #expect(try await requests(sender).first?.path == "/4/broadcasts/apps/com.example.sports")
        }
    }

    // MARK: - ExpiredProviderToken: renew once and retry once

    @Test func anExpiredTokenIsRenewedAndTheRequestRetriedOnce() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, index in
                index == 0 ? .success(errorResponse(403, "ExpiredProviderToken")) : .success(Self.ok)
            }
            let client = try makeClient(loop: loop, push: sender)
            let before = try token.current()
            clock.advance(by: .seconds(25 * 60))
            let response = try await client.send(push())
            #expect(response.status == 200)
            let sent = try await requests(sender)
            #expect(sent.count == 2)
            #expect(sent[0].headers.value(of: "authorization") == before)
            #expect(sent[1].headers.value(of: "authorization") == (try token.current()))
            #expect(sent[1].headers.value(of: "authorization") != before)
            #expect(sent[1].path == sent[0].path)
            #expect(token.statistics.tokensSigned == 2)
        }
    }

    @Test func aSecondRejectionIsNotRetriedAndPointsAtTheClock() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, _ in .success(errorResponse(403, "ExpiredProviderToken")) }
            let client = try makeClient(loop: loop, push: sender)
            clock.advance(by: .seconds(25 * 60))
            let error = try await #require(throws: APNsError.self) { try await client.send(push()) }
            #expect(try await requests(sender).count == 2)
            #expect(error.reason == .expiredProviderToken)
            #expect(error.disposition == .configuration)
            #expect(error.detail?.contains("NTP") == true)
            #expect(token.statistics.tokensSigned == 2)
        }
    }

    @Test func theClientRetriesOnlyOnceEvenWhenAnotherRenewalWouldBeAllowed() async throws {
        try await withLoop { loop in
            // Each answer takes 21 minutes of virtual time, so every rejected token may be renewed.
            let sender = FakeSender(loop: loop) { [clock] _, index in
                clock.advance(by: .seconds(21 * 60))
                return index < 5 ? .success(errorResponse(403, "ExpiredProviderToken")) : .success(Self.ok)
            }
            let client = try makeClient(loop: loop, push: sender)
            let error = try await #require(throws: APNsError.self) { try await client.send(push()) }
            #expect(try await requests(sender).count == 2)
            #expect(error.disposition == .refreshTokenAndRetry, "the token was renewed again; the caller may send once more")
            #expect(token.statistics.tokensSigned == 3)
        }
    }

    /// APNs calls a 5-minute-old token expired: its clock is ahead of ours, and a new token may
    /// not be signed before 20 minutes and the safety margin (21 minutes). The request is held, not failed (it came back
    /// `configuration` and was dead-lettered or dropped), and so is every request meanwhile,
    /// unsent. Once the rule allows, a new token is signed and the held requests go out with it,
    /// oldest first, ahead of the request that found the hold over.
    @Test func aRejectedFreshTokenHoldsRequestsUntilANewTokenMayBeSigned() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, index in
                index == 0 ? .success(errorResponse(403, "ExpiredProviderToken")) : .success(Self.ok)
            }
            let client = try makeClient(loop: loop, push: sender)
            let rejected = try token.current()
            clock.advance(by: .seconds(5 * 60))
            let collector = Collector<APNsResponse>()
            let (p1, p3, p4) = (push(id: "p-1"), push(id: "p-3"), push(id: "p-4"))
            let broadcast = Broadcast(channelID: "Y2g=", payload: payload, priority: .immediate)
            try await loop.submit { client.send(p1) { collector.results.append($0) } }
            try await loop.submit {}  // the 403 arrives
            try await loop.submit { client.broadcast(broadcast) { collector.results.append($0) } }
            #expect(try await requests(sender).count == 1, "nothing is sent during the hold")
            #expect(try await loop.submit { (client.heldRequestCount, collector.results.count) } == (2, 0))
            #expect(token.renewalHold == clock.now() + .seconds(16 * 60))
            #expect(try token.authorization() == .hold(until: clock.now() + .seconds(16 * 60)))

            clock.advance(by: .seconds(16 * 60) - .seconds(1))
            try await loop.submit { client.send(p3) { collector.results.append($0) } }
            #expect(try await requests(sender).count == 1, "still one second to wait")
            clock.advance(by: .seconds(1))
            try await loop.submit { client.send(p4) { collector.results.append($0) } }
            try await loop.submit {}
            let sent = try await requests(sender)
            #expect(sent.count == 5)
            let renewed = try token.current()
            #expect(renewed != rejected)
            #expect(sent.dropFirst().allSatisfy { $0.headers.value(of: "authorization") == renewed })
            #expect(sent.map { $0.headers.value(of: "apns-id") ?? "broadcast" } == ["p-1", "p-1", "broadcast", "p-3", "p-4"])
            let results = try await loop.submit { collector.results.map { (try? $0.get())?.status } }
            #expect(results == [200, 200, 200, 200])
            #expect(try await loop.submit { client.heldRequestCount } == 0)
            #expect(token.statistics.tokensSigned == 2 && token.statistics.renewalHolds == 1)
            #expect(token.renewalHold == nil)
        }
    }

    @Test func heldRequestsFailWithShutdownWhenTheClientStops() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, _ in .success(errorResponse(403, "ExpiredProviderToken")) }
            let client = try makeClient(loop: loop, push: sender)
            clock.advance(by: .seconds(60))
            let collector = Collector<APNsResponse>()
            let p1 = push(id: "p-1")
            try await loop.submit { client.send(p1) { collector.results.append($0) } }
            try await loop.submit {}
            #expect(try await loop.submit { client.heldRequestCount } == 1)
            try await loop.submit { client.failHeldRequests() }
            let failure = try await loop.submit { () -> APNsError? in
                if case .failure(let error)? = collector.results.first { error } else { nil }
            }
            #expect(collector.results.count == 1)
            if case .transport(.shutdown)? = failure?.failure {} else { Issue.record("not a shutdown failure: \(String(describing: failure))") }
            #expect(try await requests(sender).count == 1)
        }
    }

    @Test func concurrentRejectionsOfOneTokenRenewItOnce() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, index in
                index < 2 ? .success(errorResponse(403, "ExpiredProviderToken")) : .success(Self.ok)
            }
            let client = try makeClient(loop: loop, push: sender)
            clock.advance(by: .seconds(30 * 60))
            let collector = Collector<APNsResponse>()
            let pushes = [push(id: "p-1"), push(id: "p-2")]
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                loop.execute {
                    // Both requests are in flight with the same token before either answer arrives.
                    for push in pushes {
                        client.send(push) { result in
                            collector.results.append(result)
                            if collector.results.count == 2 { done.resume() }
                        }
                    }
                }
            }
            let results = try await loop.submit { collector.results.map { (try? $0.get())?.status } }
            #expect(results == [200, 200])
            let sent = try await requests(sender)
            #expect(sent.map { $0.headers.value(of: "apns-id") } == ["p-1", "p-2", "p-1", "p-2"])
            #expect(sent[2].headers.value(of: "authorization") == sent[3].headers.value(of: "authorization"))
            #expect(sent[0].headers.value(of: "authorization") != sent[2].headers.value(of: "authorization"))
            #expect(token.statistics.tokensSigned == 2)
        }
    }

    @Test func anExpiredTokenInAGoawayIsAlsoRenewedAndRetried() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, index in
                index == 0 ? .failure(.goaway(errorCode: 0, reason: "ExpiredProviderToken")) : .success(Self.ok)
            }
            let client = try makeClient(loop: loop, push: sender)
            clock.advance(by: .seconds(21 * 60))
            #expect(try await client.send(push()).status == 200)
            #expect(try await requests(sender).count == 2)
        }
    }

    // MARK: - Everything else goes back to the caller

    @Test(arguments: [
        (500, "InternalServerError", APNsDisposition.retryWithBackoff), (503, "Shutdown", .retryOnNewConnection),
        (410, "Unregistered", .tokenDead), (429, "TooManyRequests", .backOffToken), (400, "BadDeviceToken", .drop),
        (403, "InvalidProviderToken", .configuration),
    ])
    func otherFailuresAreNotRetried(_ status: Int, _ reason: String, _ expected: APNsDisposition) async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, _ in .success(errorResponse(status, reason, headers: [HTTP2Header("apns-id", "p-9")])) }
            let client = try makeClient(loop: loop, push: sender)
            let error = try await #require(throws: APNsError.self) { try await client.send(push(id: "p-9")) }
            #expect(error.disposition == expected)
            #expect(error.reason == APNsReason(reason))
            #expect(error.requestID == "p-9")
            #expect(try await requests(sender).count == 1)
        }
    }

    @Test func aTransportFailureKeepsTheSentID() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, _ in .failure(.transport(.socket("Connection refused"))) }
            let client = try makeClient(loop: loop, push: sender)
            let error = try await #require(throws: APNsError.self) { try await client.send(push(id: "p-3")) }
            #expect(error.requestID == "p-3")
            #expect(error.disposition == .retryOnNewConnection)
            #expect(error.description == "device push got no response: connection failed: Connection refused [request p-3] -> retry on a new connection")
        }
    }

    @Test func anInvalidPushIsRefusedWithoutUsingAStream() async throws {
        try await withLoop { loop in
            let sender = FakeSender(loop: loop) { _, _ in .success(Self.ok) }
            let client = try makeClient(loop: loop, push: sender)
            var tooLarge = push()
            tooLarge.payload = [UInt8](repeating: 0x20, count: 4097)
            let error = try await #require(throws: APNsError.self) { try await client.send(tooLarge) }
            #expect(error.reason == .payloadTooLarge)
            #expect(try await requests(sender).isEmpty)
        }
    }

    // MARK: - Channel management

    @Test func createChannelReturnsTheIDFromTheResponseHeader() async throws {
        try await withLoop { loop in
            let push = FakeSender(loop: loop) { _, _ in .success(Self.ok) }
            let management = FakeSender(loop: loop) { _, _ in
                .success(HTTP2Response(status: 201, headers: [HTTP2Header("apns-channel-id", "bmV3LWNoYW5uZWw=")]))
            }
            let client = try makeClient(loop: loop, push: push, management: management)
            #expect(try await client.createChannel(policy: .noStorage, requestID: "r-1") == "bmV3LWNoYW5uZWw=")
            let sent = try #require(try await requests(management).first)
            #expect(sent.template.authority == "127.0.0.1:8444")
            #expect(sent.body.text == #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
            #expect(sent.headers.value(of: "authorization")?.hasPrefix("bearer ") == true)
            #expect(try await requests(push).isEmpty)
        }
    }

    @Test func aCreateWithoutAChannelIDIsAnUnexpectedResponse() async throws {
        try await withLoop { loop in
            let management = FakeSender(loop: loop) { _, _ in .success(HTTP2Response(status: 201, headers: [HTTP2Header("apns-request-id", "r-2")])) }
            let client = try makeClient(loop: loop, push: FakeSender(loop: loop) { _, _ in .success(Self.ok) }, management: management)
            let error = try await #require(throws: APNsError.self) { try await client.createChannel(policy: .mostRecent) }
            guard case .unexpectedResponse(201, let detail) = error.failure else {
                Issue.record("unexpected failure \(error)")
                return
            }
            #expect(detail.contains("listChannels"))
            #expect(error.requestID == "r-2")
        }
    }

    @Test func readListAndDeleteParseTheirAnswers() async throws {
        try await withLoop { loop in
            let management = FakeSender(loop: loop) { request, _ in
                switch (request.template.method, request.path) {
                case (.get, "/1/apps/com.example.sports/channels"):
                    .success(HTTP2Response(status: 200, body: Array(#"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#.utf8)))
                case (.get, "/1/apps/com.example.sports/all-channels"):
                    .success(HTTP2Response(status: 200, body: Array(#"{"channels": ["YQ==", "Yg=="]}"#.utf8)))
                case (.delete, _):
                    .success(HTTP2Response(status: 204, headers: [HTTP2Header("apns-request-id", "r-3")]))
                default:
                    .success(errorResponse(405, "MethodNotAllowed"))
                }
            }
            let client = try makeClient(loop: loop, push: FakeSender(loop: loop) { _, _ in .success(Self.ok) }, management: management)
            #expect(try await client.readChannel("YQ==")
                == APNsChannelConfiguration(channelID: "YQ==", storagePolicy: .mostRecent, pushType: "LiveActivity"))
            #expect(try await client.listChannels() == ["YQ==", "Yg=="])
            #expect(try await client.deleteChannel("YQ==") == APNsResponse(status: 204, requestID: "r-3"))
            let sent = try await requests(management)
            #expect(sent.map { $0.headers.value(of: "apns-channel-id") } == ["YQ==", nil, "YQ=="])
        }
    }

    @Test func unreadableChannelBodiesAreUnexpectedResponses() async throws {
        try await withLoop { loop in
            let management = FakeSender(loop: loop) { _, _ in .success(HTTP2Response(status: 200, body: Array("[1,2]".utf8))) }
            let client = try makeClient(loop: loop, push: FakeSender(loop: loop) { _, _ in .success(Self.ok) }, management: management)
            let listError = try await #require(throws: APNsError.self) { try await client.listChannels() }
            #expect(listError.disposition == .drop)
            let readError = try await #require(throws: APNsError.self) { try await client.readChannel("YQ==") }
            guard case .unexpectedResponse(200, _) = readError.failure else {
                Issue.record("unexpected failure \(readError)")
                return
            }
        }
    }

    @Test func anEmptyListBodyMeansNoChannels() async throws {
        try await withLoop { loop in
            let management = FakeSender(loop: loop) { _, _ in .success(HTTP2Response(status: 200)) }
            let client = try makeClient(loop: loop, push: FakeSender(loop: loop) { _, _ in .success(Self.ok) }, management: management)
            #expect(try await client.listChannels() == [])
        }
    }

    @Test func aDeletedChannelIsReportedGone() async throws {
        try await withLoop { loop in
            let management = FakeSender(loop: loop) { _, _ in .success(errorResponse(400, "ChannelNotRegistered")) }
            let client = try makeClient(loop: loop, push: FakeSender(loop: loop) { _, _ in .success(Self.ok) }, management: management)
            let error = try await #require(throws: APNsError.self) { try await client.deleteChannel("Z29uZQ==") }
            #expect(error.disposition == .channelGone)
            #expect(error.endpoint == .channelManagement)
        }
    }
}
