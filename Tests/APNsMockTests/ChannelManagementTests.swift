import APNsMock
import Foundation
import Testing
import TestSlots

@Suite(.heavy) struct ChannelManagementTests {
    static let channels = "/1/apps/\(TestFixture.bundleID)/channels"
    static let allChannels = "/1/apps/\(TestFixture.bundleID)/all-channels"
    static let createBody = Sample.json(#"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#)

    @Test func createReadListDelete() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let auth = [("authorization", "bearer \(try fixture.token())")]
        let requestID = "5f0c2a9e-3b1d-4c7e-9a11-0d2f6b8e4c21"

        let created = try mock.send(mock.manage(Self.channels, headers: auth + [("apns-request-id", requestID)], body: Self.createBody))
        #expect(created.status == 201, "\(created)")
        #expect(created.header("apns-request-id") == requestID)
        let id = try #require(created.header("apns-channel-id"))
        #expect(Data(base64Encoded: id)?.count == 16)
        #expect(mock.server.channels() == [id: 1])

        let withChannel = auth + [("apns-channel-id", id)]
        let responses = try mock.send([
            mock.manage(Self.channels, headers: withChannel, method: "GET"),
            mock.manage(Self.allChannels, headers: auth, method: "GET"),
            mock.manage(Self.channels, headers: withChannel, method: "DELETE"),
            mock.manage(Self.channels, headers: withChannel, method: "GET"),
            mock.manage(Self.allChannels, headers: auth, method: "GET"),
        ])
        #expect(responses.map(\.status) == [200, 200, 204, 400, 200], "\(responses)")
        let config = try JSONSerialization.jsonObject(with: Data(responses[0].body)) as? [String: Any]
        #expect(config?["message-storage-policy"] as? Int == 1)
        #expect(config?["push-type"] as? String == "LiveActivity")
        let listed = try JSONSerialization.jsonObject(with: Data(responses[1].body)) as? [String: [String]]
        #expect(listed?["channels"] == [id])
        #expect(responses[3].reason == "ChannelNotRegistered")
        #expect(responses[4].bodyText == #"{"channels":[]}"#)
        #expect(mock.server.channels().isEmpty)
        #expect(mock.server.counters().count(endpoint: .deleteChannel, status: 204) == 1)
    }

    @Test func theChannelLimitIsEnforced() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(channelLimit: 2), fixture: fixture)
        let create = mock.manage(Self.channels, headers: [("authorization", "bearer \(try fixture.token())")], body: Self.createBody)
        let responses = try mock.send([create, create, create])
        #expect(responses.map(\.status) == [201, 201, 400])
        #expect(responses[2].reason == "CannotCreateChannelConfig")
        #expect(mock.server.channels().count == 2)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var path = ChannelManagementTests.channels
        var method = "POST"
        var headers: [(String, String)] = []
        var body: [UInt8]? = ChannelManagementTests.createBody
        var status = 400
        var reason: String
        var testDescription: String { name }
    }

    static let invalidRequests: [Case] = [
        Case(name: "unknown attribute", body: Sample.json(#"{"message-storage-policy":0,"push-type":"LiveActivity","name":"x"}"#),
             reason: "BadRequestParams"),
        Case(name: "missing push-type", body: Sample.json(#"{"message-storage-policy":0}"#), reason: "BadRequestParams"),
        Case(name: "lowercase push-type", body: Sample.json(#"{"message-storage-policy":0,"push-type":"liveactivity"}"#),
             reason: "BadRequestParams"),
        Case(name: "storage policy 2", body: Sample.json(#"{"message-storage-policy":2,"push-type":"LiveActivity"}"#), reason: "BadRequestParams"),
        Case(name: "body not JSON", body: Sample.json("message-storage-policy=0"), reason: "BadRequestPayload"),
        Case(name: "no body", body: nil, reason: "PayloadEmpty"),
        Case(name: "read without channel id", method: "GET", body: nil, reason: "MissingChannelId"),
        Case(name: "read with a malformed channel id", method: "GET", headers: [("apns-channel-id", "%%%")], body: nil, reason: "BadChannelId"),
        Case(name: "delete an unknown channel", method: "DELETE", headers: [("apns-channel-id", "bm90LWEtY2hhbm5lbA==")], body: nil,
             reason: "ChannelNotRegistered"),
        Case(name: "PUT", method: "PUT", status: 405, reason: "MethodNotAllowed"),
        Case(name: "POST to all-channels", path: ChannelManagementTests.allChannels, status: 405, reason: "MethodNotAllowed"),
        Case(name: "channel id in the path", path: ChannelManagementTests.channels + "/abc", method: "GET", body: nil, status: 404, reason: "BadPath"),
        Case(name: "broadcast on the management port", path: BroadcastTests.path, status: 404, reason: "BadPath"),
        Case(name: "another app", path: "/1/apps/com.other.app/channels", status: 403, reason: "TopicMismatch"),
        Case(name: "bundle with push-type suffix", path: "/1/apps/\(Sample.liveActivityTopic)/channels", reason: "TopicDisallowed"),
    ]

    @Test(arguments: invalidRequests)
    func invalidManagementRequestIsRejected(_ testCase: Case) throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let headers = [("authorization", "bearer \(try fixture.token())")] + testCase.headers
        let response = try mock.send(mock.manage(testCase.path, headers: headers, body: testCase.body, method: testCase.method))
        #expect(response.status == testCase.status, "\(response)")
        #expect(response.reason == testCase.reason, "\(response)")
        #expect(response.header("apns-request-id") != nil)
        #expect(mock.server.channels().isEmpty)
    }
}
