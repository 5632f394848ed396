import APNs
import HTTP2
import Testing
import TouchlineCore

/// The dynamic headers as (name, value, indexed) triples, in order.
func fields(_ headers: DynamicHeaders) -> [String] {
    (0..<headers.count).map { i in
        let field = headers[i]
        return "\(field.name.description)=\(field.value)\(field.indexed ? " (indexed)" : "")"
    }
}

func templateHeaders(_ request: HTTP2Request) -> [String] {
    request.template.headers.map { "\($0.name)=\($0.value)" }
}

@Suite struct RequestEncodingTests {
    let encoder: APNsRequestEncoder
    let payload = Array(#"{"aps":{"timestamp":1,"event":"update","content-state":{}}}"#.utf8)

    init() throws { encoder = try APNsRequestEncoder(bundleID: bundleID, environment: .production) }

    // MARK: - Endpoints

    @Test func endpointsFollowApplesHostsAndPorts() {
        #expect(APNsEnvironment.production.pushEndpoint.authority == "api.push.apple.com")
        #expect(APNsEnvironment.sandbox.pushEndpoint.authority == "api.sandbox.push.apple.com")
        #expect(APNsEnvironment.production.managementEndpoint.authority == "api-manage-broadcast.push.apple.com:2196")
        #expect(APNsEnvironment.sandbox.managementEndpoint.authority == "api-manage-broadcast.sandbox.push.apple.com:2195")
        let custom = APNsEnvironment.custom(pushHost: "127.0.0.1", pushPort: 8443, managementHost: "::1", managementPort: 9443)
        #expect(custom.endpoint(for: .device) == APNsEndpoint(host: "127.0.0.1", port: 8443))
        #expect(custom.endpoint(for: .broadcast).authority == "127.0.0.1:8443")
        #expect(custom.endpoint(for: .channelManagement).authority == "[::1]:9443")
    }

    @Test func aBroadcastHostMovesBroadcastsOnly() throws {
        let configuration = APNsConfiguration(keyPath: "k.p8", keyID: "ABCDE12345", teamID: "TEAM123456", bundleID: "com.example.sports",
                                              environment: .production)
        #expect(configuration.broadcastEndpoint == APNsEndpoint(host: "api.push.apple.com", port: 443), "default: the push host")
        var moved = configuration
        moved.broadcastHost = APNsEndpoint(host: "api-broadcast.push.apple.com", port: 443)
        let encoder = try APNsRequestEncoder(bundleID: "com.example.sports", environment: .production, broadcastEndpoint: moved.broadcastEndpoint)
        let broadcast = try encoder.request(for: Broadcast(channelID: "dHN0LTEyMzQ1Ng==", payload: payload, priority: .immediate))
        #expect(broadcast.template.authority == "api-broadcast.push.apple.com")
        let device = try encoder.request(for: LiveActivityPush(deviceToken: hexToken, payload: payload, priority: .immediate))
        #expect(device.template.authority == "api.push.apple.com", "device pushes stay on the push host")
        #expect(encoder.createChannelRequest(policy: .noStorage).template.authority == "api-manage-broadcast.push.apple.com:2196")
    }

    // MARK: - Device pushes

    @Test func aDevicePushHasTheLiveActivityTopicAndPath() throws {
        let request = try encoder.request(for: LiveActivityPush(deviceToken: hexToken, payload: payload, priority: .immediate))
        #expect(request.template.method == .post)
        #expect(request.template.authority == "api.push.apple.com")
        #expect(request.path == "/3/device/\(hexToken)")
        #expect(templateHeaders(request) == [
            "apns-push-type=liveactivity", "apns-topic=com.example.sports.push-type.liveactivity", "content-type=application/json",
        ])
        #expect(fields(request.headers) == ["apns-priority=10 (indexed)"])
        #expect(request.body == payload)
    }

    @Test func optionalDeviceHeadersAreAddedWhenSet() throws {
        let push = LiveActivityPush(deviceToken: hexToken, payload: payload, priority: .powerConsiderate,
                                    expiration: .at(UnixTime(seconds: 1_767_290_400)),
                                    apnsID: "5f0c2a9e-3b1d-4c7e-9a11-0d2f6b8e4c21", collapseID: "match-42")
        #expect(fields(try encoder.request(for: push).headers) == [
            "apns-priority=5 (indexed)", "apns-expiration=1767290400",
            "apns-id=5f0c2a9e-3b1d-4c7e-9a11-0d2f6b8e4c21", "apns-collapse-id=match-42",
        ])
        var immediate = push
        immediate.expiration = .immediately
        #expect(try encoder.request(for: immediate).headers.value(of: "apns-expiration") == "0")
    }

    @Test func requestsOfAKindShareOneTemplate() throws {
        let a = try encoder.request(for: LiveActivityPush(deviceToken: hexToken, payload: payload, priority: .immediate))
        let b = try encoder.request(for: LiveActivityPush(deviceToken: "ab", payload: payload, priority: .powerConsiderate))
        #expect(a.template === b.template)
        let c = try encoder.request(for: Broadcast(channelID: "Y2g=", payload: payload, priority: .immediate))
        #expect(a.template !== c.template)
    }

    @Test func devicePayloadsUpTo4096BytesAreAccepted() throws {
        let largest = [UInt8](repeating: UInt8(ascii: " "), count: 4096)
        #expect(try encoder.request(for: LiveActivityPush(deviceToken: hexToken, payload: largest, priority: .immediate)).body.count == 4096)
        let error = try #require(throws: APNsError.self) {
            try encoder.request(for: LiveActivityPush(deviceToken: hexToken, payload: largest + [0x20], priority: .immediate))
        }
        #expect(error.reason == .payloadTooLarge)
        #expect(error.disposition == .drop)
        #expect(error.status == nil)
        #expect(error.description == "device push not sent, APNs would answer PayloadTooLarge: payload is 4097 bytes, the limit is 4096 -> drop (do not retry)")
    }

    @Test func emptyPayloadsAreRefused() throws {
        let error = try #require(throws: APNsError.self) {
            try encoder.request(for: LiveActivityPush(deviceToken: hexToken, payload: [], priority: .immediate))
        }
        #expect(error.reason == .payloadEmpty)
    }

    @Test func collapseIDsUpTo64BytesAreAccepted() throws {
        let longest = String(repeating: "é", count: 32)
        let push = LiveActivityPush(deviceToken: hexToken, payload: payload, priority: .immediate, collapseID: longest)
        #expect(try encoder.request(for: push).headers.value(of: "apns-collapse-id") == longest)
        var tooLong = push
        tooLong.collapseID = longest + "x"
        let error = try #require(throws: APNsError.self) { try encoder.request(for: tooLong) }
        #expect(error.reason == .badCollapseId)
        #expect(error.disposition == .drop)
    }

    @Test(arguments: [("", APNsReason.missingDeviceToken), ("abc", .badDeviceToken), ("ab/../cd", .badDeviceToken), ("zz", .badDeviceToken)])
    func deviceTokensMustBeHex(_ token: String, _ reason: APNsReason) throws {
        let error = try #require(throws: APNsError.self) {
            try encoder.request(for: LiveActivityPush(deviceToken: token, payload: payload, priority: .immediate))
        }
        #expect(error.reason == reason)
        #expect(error.endpoint == .device)
    }

    @Test func upperCaseHexTokensAreAccepted() throws {
        let request = try encoder.request(for: LiveActivityPush(deviceToken: "ABCDEF01", payload: payload, priority: .immediate))
        #expect(request.path == "/3/device/ABCDEF01")
    }

    // MARK: - Broadcasts

    @Test func aBroadcastHasNoTopicAndThePlainBundleInThePath() throws {
        let request = try encoder.request(for: Broadcast(channelID: "dGVzdC1jaGFubmVs", payload: payload, priority: .immediate))
        #expect(request.template.method == .post)
        #expect(request.template.authority == "api.push.apple.com")
        #expect(request.path == "/4/broadcasts/apps/com.example.sports")
        #expect(templateHeaders(request) == ["apns-push-type=liveactivity", "content-type=application/json"])
        #expect(fields(request.headers) == [
            "apns-channel-id=dGVzdC1jaGFubmVs (indexed)", "apns-expiration=0 (indexed)", "apns-priority=10 (indexed)",
        ])
        #expect(!templateHeaders(request).contains { $0.hasPrefix("apns-topic") })
        #expect(request.headers.value(of: "apns-topic") == nil)
    }

    @Test func broadcastExpirationPriorityAndRequestID() throws {
        let broadcast = Broadcast(channelID: "Y2g=", payload: payload, priority: .powerConsiderate,
                                  expiration: .at(UnixTime(seconds: 1_767_291_300)), requestID: "9b7c1e44-2f0a-4d55-8c3e-61a0b2f9d7aa")
        #expect(fields(try encoder.request(for: broadcast).headers) == [
            "apns-channel-id=Y2g= (indexed)", "apns-expiration=1767291300", "apns-priority=5 (indexed)",
            "apns-request-id=9b7c1e44-2f0a-4d55-8c3e-61a0b2f9d7aa",
        ])
    }

    @Test func broadcastPayloadsUpTo5120BytesAreAccepted() throws {
        let largest = [UInt8](repeating: UInt8(ascii: " "), count: 5120)
        #expect(try encoder.request(for: Broadcast(channelID: "Y2g=", payload: largest, priority: .immediate)).body.count == 5120)
        let error = try #require(throws: APNsError.self) {
            try encoder.request(for: Broadcast(channelID: "Y2g=", payload: largest + [0x20], priority: .immediate))
        }
        #expect(error.reason == .payloadTooLarge)
        #expect(error.endpoint == .broadcast)
    }

    @Test func aBroadcastNeedsAChannelID() throws {
        let error = try #require(throws: APNsError.self) {
            try encoder.request(for: Broadcast(channelID: "", payload: payload, priority: .immediate))
        }
        #expect(error.reason == .missingChannelId)
    }

    // MARK: - Channel management

    @Test func createChannelPostsTheStoragePolicyToTheManagementHost() {
        let request = encoder.createChannelRequest(policy: .noStorage, requestID: "5f0c2a9e-3b1d-4c7e-9a11-0d2f6b8e4c21")
        #expect(request.template.method == .post)
        #expect(request.template.authority == "api-manage-broadcast.push.apple.com:2196")
        #expect(request.path == "/1/apps/com.example.sports/channels")
        #expect(templateHeaders(request) == ["content-type=application/json"])
        #expect(fields(request.headers) == ["apns-request-id=5f0c2a9e-3b1d-4c7e-9a11-0d2f6b8e4c21"])
        #expect(request.body.text == #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
        #expect(encoder.createChannelRequest(policy: .mostRecent).body.text
            == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
    }

    @Test func readAndDeleteCarryTheChannelID() throws {
        let read = try encoder.readChannelRequest(channelID: "Y2g=")
        #expect(read.template.method == .get)
        #expect(read.path == "/1/apps/com.example.sports/channels")
        #expect(fields(read.headers) == ["apns-channel-id=Y2g="])
        #expect(read.body.isEmpty)
        let delete = try encoder.deleteChannelRequest(channelID: "Y2g=", requestID: "r-1")
        #expect(delete.template.method == .delete)
        #expect(delete.template.authority == "api-manage-broadcast.push.apple.com:2196")
        #expect(delete.path == "/1/apps/com.example.sports/channels")
        #expect(fields(delete.headers) == ["apns-request-id=r-1", "apns-channel-id=Y2g="])
        #expect(throws: APNsError.self) { try encoder.deleteChannelRequest(channelID: "") }
    }

    @Test func listChannelsGetsAllChannels() throws {
        let sandbox = try APNsRequestEncoder(bundleID: bundleID, environment: .sandbox)
        let request = sandbox.listChannelsRequest()
        #expect(request.template.method == .get)
        #expect(request.template.authority == "api-manage-broadcast.sandbox.push.apple.com:2195")
        #expect(request.path == "/1/apps/com.example.sports/all-channels")
        #expect(request.headers.count == 0)
    }

    @Test(arguments: ["", "com.example.sports.push-type.liveactivity", "com/example", "com.example sports"])
    func unusableBundleIDsAreRejected(_ bad: String) {
        #expect(throws: APNsConfigurationError.self) { try APNsRequestEncoder(bundleID: bad, environment: .sandbox) }
    }
}
