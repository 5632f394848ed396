import APNsMock
import Foundation
import Testing
import TestSlots

@Suite(.heavy) struct BroadcastTests {
    static let path = "/4/broadcasts/apps/\(TestFixture.bundleID)"

    @Test func validBroadcastIsAcceptedAndEchoesTheRequestID() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        let requestID = "9b7c1e44-2f0a-4d55-8c3e-61a0b2f9d7aa"
        let response = try mock.send(mock.push(Self.path, headers: Sample.broadcastHeaders(token: try fixture.token(), channel: channel,
                                                                                         extra: [("apns-request-id", requestID)]),
                                               body: Sample.update))
        #expect(response.status == 200, "\(response)")
        #expect(response.header("apns-request-id") == requestID)
        #expect(response.header("apns-unique-id")?.count == 36)
        let recorded = try #require(mock.server.recordedRequests().last)
        #expect(recorded.endpoint == .broadcast)
        #expect(recorded.channelID == channel)
        #expect(recorded.priority == 10)
        #expect(recorded.event == "update")
    }

    /// The localized form ActivityKit reads: title and body as `loc-key` with string `loc-args`.
    @Test func aLocalizedAlertIsAccepted() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        for alert in [#"{"title":{"loc-key":"football.goal.title","loc-args":[]},"body":{"loc-key":"football.score","loc-args":["ARS","2","1","CHE"]}}"#,
                      #"{"title":{"loc-key":"football.goal.title"},"body":{"loc-key":"football.incident.team", "loc-args" : [ "ARS" ]},"sound":"default"}"#] {
            let response = try mock.send(mock.push(Self.path, headers: Sample.broadcastHeaders(token: try fixture.token(), channel: channel),
                                                   body: Sample.update(alert: alert)))
            #expect(response.status == 200, "\(alert): \(response)")
        }
    }

    @Test func storedChannelsAcceptAnExpirationAndPriorityOne() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 1))
        let headers = Sample.broadcastHeaders(token: try fixture.token(), channel: channel)
            .filter { $0.0 != "apns-expiration" && $0.0 != "apns-priority" } + [("apns-expiration", "1767300000"), ("apns-priority", "1")]
        let response = try mock.send(mock.push(Self.path, headers: headers, body: Sample.update))
        #expect(response.status == 200, "\(response)")
        #expect(response.header("apns-request-id") != nil)
    }

    @Test func bodiesUpTo5120BytesAreAccepted() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        func body(size: Int) -> [UInt8] {
            let prefix = #"{"aps":{"timestamp":1,"event":"update","content-state":{"pad":""#
            let suffix = #""}}}"#
            return Sample.json(prefix + String(repeating: "x", count: size - prefix.utf8.count - suffix.utf8.count) + suffix)
        }
        let headers = Sample.broadcastHeaders(token: try fixture.token(), channel: channel)
        let responses = try mock.send([mock.push(Self.path, headers: headers, body: body(size: 5120)),
                                       mock.push(Self.path, headers: headers, body: body(size: 5121))])
        #expect(responses.map(\.status) == [200, 413])
        #expect(responses[1].reason == "PayloadTooLarge")
    }

    enum ChannelChoice: Sendable {
        case noStorage, stored, none, literal(String)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var path = BroadcastTests.path
        var channel = ChannelChoice.noStorage
        var headers: [(String, String)] = []
        var removing: Set<String> = []
        var body: [UInt8]? = Sample.update
        var status = 400
        var reason: String
        var testDescription: String { name }
    }

    static let invalidRequests: [Case] = [
        Case(name: "missing channel id", channel: .none, reason: "MissingChannelId"),
        Case(name: "channel id not base64", channel: .literal("not base64!"), reason: "BadChannelId"),
        Case(name: "channel id too long", channel: .literal(String(repeating: "QUJD", count: 20)), reason: "BadChannelId"),
        Case(name: "unknown channel", channel: .literal("bm90LWEtY2hhbm5lbA=="), reason: "ChannelNotRegistered"),
        Case(name: "missing push type", removing: ["apns-push-type"], reason: "MissingPushType"),
        Case(name: "alert push type", headers: [("apns-push-type", "alert")], removing: ["apns-push-type"], reason: "InvalidPushType"),
        Case(name: "missing expiration", removing: ["apns-expiration"], reason: "BadExpirationDate"),
        Case(name: "expiration on a no-storage channel", headers: [("apns-expiration", "1767300000")], removing: ["apns-expiration"],
             reason: "BadExpirationDate"),
        Case(name: "expiration not a number", channel: .stored, headers: [("apns-expiration", "later")], removing: ["apns-expiration"],
             reason: "BadExpirationDate"),
        Case(name: "missing priority", removing: ["apns-priority"], reason: "BadPriority"),
        Case(name: "priority 7", headers: [("apns-priority", "7")], removing: ["apns-priority"], reason: "BadPriority"),
        Case(name: "apns-topic sent", headers: [("apns-topic", TestFixture.bundleID)], reason: "BadRequestParams"),
        Case(name: "request id not a UUID", headers: [("apns-request-id", "abc")], reason: "BadMessageId"),
        Case(name: "channel id twice", headers: [("apns-channel-id", "QUJD")], reason: "DuplicateHeaders"),
        Case(name: "start event", body: Sample.start(), reason: "BadRequestPayload"),
        Case(name: "localized title without loc-key", body: Sample.update(alert: #"{"title":{"loc-args":["ARS"]},"body":"x"}"#),
             reason: "BadRequestPayload"),
        Case(name: "localized body with an empty loc-key", body: Sample.update(alert: #"{"title":"x","body":{"loc-key":""}}"#),
             reason: "BadRequestPayload"),
        Case(name: "loc-args holding a number", body: Sample.update(alert: #"{"title":"x","body":{"loc-key":"football.score","loc-args":["ARS",2,"1","CHE"]}}"#),
             reason: "BadRequestPayload"),
        Case(name: "loc-args not an array", body: Sample.update(alert: #"{"title":"x","body":{"loc-key":"k","loc-args":"ARS"}}"#),
             reason: "BadRequestPayload"),
        Case(name: "title-loc-key inside a localized text", body: Sample.update(alert: #"{"title":{"loc-key":"k","title-loc-key":"k"},"body":"x"}"#),
             reason: "BadRequestPayload"),
        Case(name: "alert body a number", body: Sample.update(alert: #"{"title":"x","body":3}"#), reason: "BadRequestPayload"),
        Case(name: "no body", body: nil, reason: "PayloadEmpty"),
        Case(name: "body not JSON", body: Sample.json("aps"), reason: "BadRequestPayload"),
        Case(name: "bundle id with push-type suffix", path: "/4/broadcasts/apps/\(Sample.liveActivityTopic)", reason: "TopicDisallowed"),
        Case(name: "another app's bundle id", path: "/4/broadcasts/apps/com.other.app", status: 403, reason: "TopicMismatch"),
        Case(name: "singular broadcast path", path: "/4/broadcast/apps/\(TestFixture.bundleID)", status: 404, reason: "BadPath"),
    ]

    @Test(arguments: invalidRequests)
    func invalidBroadcastIsRejected(_ testCase: Case) throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let channel: String? = switch testCase.channel {
        case .noStorage: mock.server.createChannel(storagePolicy: 0)
        case .stored: mock.server.createChannel(storagePolicy: 1)
        case .none: nil
        case .literal(let id): id
        }
        var headers = Sample.broadcastHeaders(token: try fixture.token(), channel: channel ?? "")
            .filter { !testCase.removing.contains($0.0) } + testCase.headers
        if channel == nil { headers.removeAll { $0.0 == "apns-channel-id" } }
        let response = try mock.send(mock.push(testCase.path, headers: headers, body: testCase.body))
        #expect(response.status == testCase.status, "\(response)")
        #expect(response.reason == testCase.reason, "\(response)")
        // A path that is not the broadcast path cannot know which id header to use.
        #expect((response.header("apns-request-id") ?? response.header("apns-id")) != nil)
    }
}
