import APNsMock
import Foundation
import Testing
import TestSlots

@Suite(.heavy) struct DevicePushTests {
    @Test func validLiveActivityUpdateIsAccepted() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let apnsID = "5f0c2a9e-3b1d-4c7e-9a11-0d2f6b8e4c21"
        let response = try mock.send(mock.push("/3/device/\(Sample.deviceToken)",
                                               headers: Sample.deviceHeaders(token: try fixture.token(), extra: [("apns-id", apnsID), ("apns-priority", "5")]),
                                               body: Sample.update))
        #expect(response.status == 200, "\(response)")
        #expect(response.header("apns-id") == apnsID)
        #expect(response.header("apns-unique-id")?.count == 36)
        #expect(response.body.isEmpty)

        let recorded = try #require(mock.server.recordedRequests().last)
        #expect(recorded.endpoint == .device)
        #expect(recorded.status == 200)
        #expect(recorded.deviceToken == Sample.deviceToken)
        #expect(recorded.priority == 5)
        #expect(recorded.event == "update")
        #expect(recorded.body == Sample.update)
        #expect(recorded.header("apns-topic") == Sample.liveActivityTopic)
        #expect(mock.server.counters().count(endpoint: .device, status: 200) == 1)
    }

    @Test func generatesApnsIDAndDefaultsPriorityTo10() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let response = try mock.send(mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: try fixture.token()), body: Sample.update))
        #expect(response.status == 200)
        let id = try #require(response.header("apns-id"))
        #expect(id.count == 36 && id == id.lowercased())
        #expect(mock.server.recordedRequests().last?.priority == 10)
    }

    @Test func pushToStartIntoAnExistingChannelIsAccepted() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        let response = try mock.send(mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: try fixture.token()),
                                               body: Sample.start(channel: channel)))
        #expect(response.status == 200, "\(response)")
        #expect(mock.server.recordedRequests().last?.channelID == channel)
        #expect(mock.server.recordedRequests().last?.event == "start")
    }

    /// One invalid request and the answer APNs gives to it.
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var path: String = "/3/device/\(Sample.deviceToken)"
        var method = "POST"
        var headers: [(String, String)] = []
        var removing: Set<String> = []
        var body: [UInt8]? = Sample.update
        var status: Int
        var reason: String
        var testDescription: String { name }
    }

    static let invalidRequests: [Case] = [
        Case(name: "missing push type", removing: ["apns-push-type"], status: 400, reason: "MissingPushType"),
        Case(name: "unknown push type", headers: [("apns-push-type", "shout")], removing: ["apns-push-type"], status: 400, reason: "InvalidPushType"),
        Case(name: "missing topic", removing: ["apns-topic"], status: 400, reason: "MissingTopic"),
        Case(name: "topic without suffix", headers: [("apns-topic", TestFixture.bundleID)], removing: ["apns-topic"],
             status: 400, reason: "DeviceTokenNotForTopic"),
        Case(name: "topic of another app", headers: [("apns-topic", "com.other.app.push-type.liveactivity")], removing: ["apns-topic"],
             status: 400, reason: "DeviceTokenNotForTopic"),
        Case(name: "malformed topic", headers: [("apns-topic", "not a topic!")], removing: ["apns-topic"], status: 400, reason: "BadTopic"),
        Case(name: "priority 1 for a Live Activity", headers: [("apns-priority", "1")], status: 400, reason: "BadPriority"),
        Case(name: "priority not a number", headers: [("apns-priority", "high")], status: 400, reason: "BadPriority"),
        Case(name: "expiration not a number", headers: [("apns-expiration", "tomorrow")], status: 400, reason: "BadExpirationDate"),
        Case(name: "apns-id not a UUID", headers: [("apns-id", "1234")], status: 400, reason: "BadMessageId"),
        Case(name: "collapse id over 64 bytes", headers: [("apns-collapse-id", String(repeating: "c", count: 65))], status: 400, reason: "BadCollapseId"),
        Case(name: "topic sent twice", headers: [("apns-topic", Sample.liveActivityTopic)], status: 400, reason: "DuplicateHeaders"),
        Case(name: "token not hex", path: "/3/device/" + String(repeating: "zz", count: 32), status: 400, reason: "BadDeviceToken"),
        Case(name: "token too short", path: "/3/device/abcd", status: 400, reason: "BadDeviceToken"),
        Case(name: "token of odd length", path: "/3/device/" + String(repeating: "a", count: 65), status: 400, reason: "BadDeviceToken"),
        Case(name: "no token", path: "/3/device/", status: 400, reason: "MissingDeviceToken"),
        Case(name: "no body", body: nil, status: 400, reason: "PayloadEmpty"),
        Case(name: "body over 4096 bytes", body: Sample.json("{\"aps\":{},\"pad\":\"" + String(repeating: "x", count: 4090) + "\"}"),
             status: 413, reason: "PayloadTooLarge"),
        Case(name: "body not JSON", body: Sample.json("{\"aps\":"), status: 400, reason: "BadRequestPayload"),
        Case(name: "body without aps", body: Sample.json("{\"event\":\"update\"}"), status: 400, reason: "BadRequestPayload"),
        Case(name: "unknown event", body: Sample.json(#"{"aps":{"timestamp":1,"event":"begin","content-state":{}}}"#), status: 400, reason: "BadRequestPayload"),
        Case(name: "no timestamp", body: Sample.json(#"{"aps":{"event":"update","content-state":{}}}"#), status: 400, reason: "BadRequestPayload"),
        Case(name: "timestamp as string", body: Sample.json(#"{"aps":{"timestamp":"1","event":"update","content-state":{}}}"#),
             status: 400, reason: "BadRequestPayload"),
        Case(name: "no content-state", body: Sample.json(#"{"aps":{"timestamp":1,"event":"update"}}"#), status: 400, reason: "BadRequestPayload"),
        Case(name: "misspelt aps key", body: Sample.json(#"{"aps":{"timestamp":1,"event":"update","content-state":{},"staleDate":5}}"#),
             status: 400, reason: "BadRequestPayload"),
        Case(name: "stale-date not a number", body: Sample.json(#"{"aps":{"timestamp":1,"event":"update","content-state":{},"stale-date":"soon"}}"#),
             status: 400, reason: "BadRequestPayload"),
        Case(name: "attributes on an update",
             body: Sample.json(#"{"aps":{"timestamp":1,"event":"update","content-state":{},"attributes-type":"A","attributes":{}}}"#),
             status: 400, reason: "BadRequestPayload"),
        Case(name: "start without alert",
             body: Sample.json(#"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":"A","attributes":{}}}"#),
             status: 400, reason: "BadRequestPayload"),
        Case(name: "start without attributes-type",
             body: Sample.json(#"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes":{},"alert":{"title":"t"}}}"#),
             status: 400, reason: "BadRequestPayload"),
        Case(name: "start into an unknown channel", body: Sample.start(channel: "bm90LWEtY2hhbm5lbA=="), status: 400, reason: "ChannelNotRegistered"),
        Case(name: "GET on the device path", method: "GET", body: nil, status: 405, reason: "MethodNotAllowed"),
        Case(name: "unknown path", path: "/3/devices/\(Sample.deviceToken)", status: 404, reason: "BadPath"),
        Case(name: "channel management on the push port", path: "/1/apps/\(TestFixture.bundleID)/channels", status: 404, reason: "BadPath"),
    ]

    @Test(arguments: invalidRequests)
    func invalidRequestIsRejected(_ testCase: Case) throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let headers = Sample.deviceHeaders(token: try fixture.token()).filter { !testCase.removing.contains($0.0) } + testCase.headers
        let response = try mock.send(mock.push(testCase.path, headers: headers, body: testCase.body, method: testCase.method))
        #expect(response.status == testCase.status, "\(response)")
        #expect(response.reason == testCase.reason, "\(response)")
        #expect(response.header("apns-id") != nil)
        #expect(mock.server.counters().count(status: testCase.status, reason: MockAPNsReason(rawValue: testCase.reason)) == 1)
    }

    @Test func alertPushesUseThePlainBundleTopic() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let token = try fixture.token()
        let alert = Sample.json(#"{"aps":{"alert":{"title":"Full time"}}}"#)
        let responses = try mock.send([
            mock.push("/3/device/\(Sample.deviceToken)", headers: [("authorization", "bearer \(token)"), ("apns-push-type", "alert"),
                                                                   ("apns-topic", TestFixture.bundleID)], body: alert),
            mock.push("/3/device/\(Sample.deviceToken)", headers: [("authorization", "bearer \(token)"), ("apns-push-type", "alert"),
                                                                   ("apns-topic", Sample.liveActivityTopic)], body: alert),
        ])
        #expect(responses.map(\.status) == [200, 400])
        #expect(responses[1].reason == "DeviceTokenNotForTopic")
    }
}

@Suite(.heavy) struct RecordingTests {
    @Test func theRecordingKeepsTheMostRecentRequestsAndCanBeReset() throws {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration()
        configuration.recordingCapacity = 3
        let mock = try RunningMock(configuration, fixture: fixture)
        let token = try fixture.token()
        let requests = (0..<5).map {
            mock.push("/3/device/\(Sample.deviceToken($0))", headers: Sample.deviceHeaders(token: token), body: Sample.update)
        }
        _ = try mock.send(requests)
        #expect(mock.server.recordedRequests().map(\.deviceToken) == (2..<5).map { Sample.deviceToken($0) })
        #expect(mock.server.counters().count(endpoint: .device, status: 200) == 5)
        mock.server.resetRecording()
        #expect(mock.server.recordedRequests().isEmpty)
        #expect(mock.server.counters().total == 0)
    }

    @Test func countersWorkWithRecordingOff() throws {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration()
        configuration.recordingCapacity = 0
        let mock = try RunningMock(configuration, fixture: fixture)
        let response = try mock.send(mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: try fixture.token()),
                                               body: Sample.update))
        #expect(response.status == 200)
        #expect(mock.server.recordedRequests().isEmpty)
        #expect(mock.server.counters().count(endpoint: .device) == 1)
        #expect(mock.server.counters().connectionsAccepted == 1)
    }
}
