import Foundation
import Testing
import TouchlineCore

@Suite struct LiveActivityPayloadTests {
    @Test func anUpdateEncodesToTheExactBytes() throws {
        let payload = LiveActivityPayload(
            timestamp: UnixTime(seconds: 1_767_290_400), event: .update,
            contentState: ["home": 2, "away": 1, "clock": "67'", "lastEvent": "Goal - Home"],
            staleDate: UnixTime(seconds: 1_767_291_300), relevanceScore: 100,
            alert: LiveActivityAlert(title: "Goal!", body: "Home 2-1 Away", sound: "default"))
        let expected = #"{"aps":{"timestamp":1767290400,"event":"update","content-state":{"home":2,"away":1,"clock":"67'","#
            + #""lastEvent":"Goal - Home"},"stale-date":1767291300,"relevance-score":100,"#
            + #""alert":{"title":"Goal!","body":"Home 2-1 Away","sound":"default"}}}"#
        #expect(payload.encoded().text == expected)
        #expect(try JSONSerialization.jsonObject(with: Data(payload.encoded())) is [String: Any])
    }

    /// A start stored ahead of its time is stamped when it is sent: only the timestamp changes.
    @Test func aStoredPayloadIsRestampedInPlace() {
        let scheduled = LiveActivityPayload(timestamp: UnixTime(seconds: 1_767_290_400), event: .start, contentState: ["timestamp": 5],
                                            alert: LiveActivityAlert(title: "Kick-off", body: "ARS v CHE"), attributesType: "MatchAttributes",
                                            attributes: ["homeName": "Arsenal"], inputPushChannel: "abc=")
        var sent = scheduled
        sent.timestamp = UnixTime(seconds: 1_767_895_200)
        #expect(LiveActivityPayload.restamped(scheduled.encoded(), timestamp: sent.timestamp) == sent.encoded())
        #expect(LiveActivityPayload.restamped(Array(#"{"aps":{"event":"start","timestamp":1}}"#.utf8), timestamp: sent.timestamp) == nil,
                "not as encoded() writes")
        #expect(LiveActivityPayload.restamped(Array(#"{"aps":{"timestamp":"#.utf8), timestamp: sent.timestamp) == nil, "cut short")
    }

    /// A start waiting for its time moves to the channel that replaced its own: only the
    /// start's channel changes, not a key of that name the provider put in its attributes.
    @Test func aStoredStartIsMovedToAnotherChannel() {
        var start = LiveActivityPayload(timestamp: UnixTime(seconds: 1_767_290_400), event: .start, contentState: ["home": 0],
                                        alert: LiveActivityAlert(title: "Kick-off", body: "ARS v CHE"), attributesType: "MatchAttributes",
                                        attributes: ["input-push-channel": "b2xk/Y2g="], inputPushChannel: "b2xk/Y2g=", requestsPushToken: true)
        let stored = start.encoded()
        start.inputPushChannel = "bmV3/Y2g="
        #expect(LiveActivityPayload.retargeted(stored, from: "b2xk/Y2g=", to: "bmV3/Y2g=") == start.encoded())
        #expect(LiveActivityPayload.retargeted(stored, from: "b3RoZXI=", to: "bmV3/Y2g=") == nil, "not a start into that channel")
        let update = LiveActivityPayload(timestamp: UnixTime(seconds: 1), event: .update, contentState: ["home": 0])
        #expect(LiveActivityPayload.retargeted(update.encoded(), from: "b2xk/Y2g=", to: "bmV3") == nil)
    }

    @Test func aPushToStartIntoAChannelHasEveryStartKeyInOrder() {
        let payload = LiveActivityPayload(
            timestamp: UnixTime(seconds: 1_767_286_800), event: .start,
            contentState: ["home": 0, "away": 0, "clock": "0'", "lastEvent": "Kick-off"],
            alert: LiveActivityAlert(title: "Kick-off", body: "HOM v AWY has started"),
            attributesType: "MatchAttributes", attributes: ["matchId": "m-123", "home": "HOM", "away": "AWY"],
            inputPushChannel: "dHVyYm8tY2hhbm5lbA==", requestsPushToken: true)
        let expected = #"{"aps":{"timestamp":1767286800,"event":"start","#
            + #""content-state":{"home":0,"away":0,"clock":"0'","lastEvent":"Kick-off"},"#
            + #""alert":{"title":"Kick-off","body":"HOM v AWY has started"},"attributes-type":"MatchAttributes","#
            + #""attributes":{"matchId":"m-123","home":"HOM","away":"AWY"},"#
            + #""input-push-channel":"dHVyYm8tY2hhbm5lbA==","input-push-token":1}}"#
        #expect(payload.encoded().text == expected)
    }

    @Test func anEndWithRawContentStateCopiesTheBytesVerbatim() {
        let state = Array(#"{"home":3,"away":1,"clock":"FT"}"#.utf8)
        let payload = LiveActivityPayload(timestamp: UnixTime(seconds: 10), event: .end, contentState: .raw(state),
                                          dismissalDate: UnixTime(seconds: 20))
        #expect(payload.encoded().text
            == #"{"aps":{"timestamp":10,"event":"end","content-state":{"home":3,"away":1,"clock":"FT"},"dismissal-date":20}}"#)
    }

    @Test func equalPayloadsGiveEqualBytes() {
        let make = { LiveActivityPayload(timestamp: UnixTime(seconds: 5), event: .update, contentState: ["a": 1, "b": [true, nil]]) }
        #expect(make().encoded() == make().encoded())
        #expect(make().encoded().text == #"{"aps":{"timestamp":5,"event":"update","content-state":{"a":1,"b":[true,null]}}}"#)
    }

    @Test func localizedAlertTextUsesLocKeyAndLocArgs() {
        let alert = LiveActivityAlert(title: .localized(key: "GOAL_TITLE", arguments: []),
                                      body: .localized(key: "GOAL_BODY", arguments: ["Home", "2", "1"]), sound: "goal.caf")
        let payload = LiveActivityPayload(timestamp: UnixTime(seconds: 1), event: .update, contentState: [:], alert: alert)
        #expect(payload.encoded().text == #"{"aps":{"timestamp":1,"event":"update","content-state":{},"alert":{"#
            + #""title":{"loc-key":"GOAL_TITLE","loc-args":[]},"#
            + #""body":{"loc-key":"GOAL_BODY","loc-args":["Home","2","1"]},"sound":"goal.caf"}}}"#)
    }

    @Test func stringsAreEscaped() throws {
        let tricky = "say \"hi\"\\ \n\t\r\u{01} é⚽"
        let json = JSONValue.object([.init(tricky, .string(tricky))]).encoded
        let escaped = #""say \"hi\"\\ \n\t\r\u0001 é⚽""#
        #expect(json.text == "{\(escaped):\(escaped)}")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: String])
        #expect(parsed == [tricky: tricky])
    }

    @Test func numbersAreWrittenCompactly() {
        let value: JSONValue = [100.0, 0.5, -3, 1e20, .number(.nan), .number(.infinity), .integer(.min), 1.25e-7]
        #expect(value.encoded.text == "[100,0.5,-3,1e+20,null,null,-9223372036854775808,1.25e-07]")
        let score = LiveActivityPayload(timestamp: UnixTime(seconds: 1), event: .update, contentState: [:], relevanceScore: 49.5)
        #expect(score.encoded().text.contains(#""relevance-score":49.5"#))
    }

    @Test func everyValueKindEncodes() {
        let value: JSONValue = ["null": nil, "yes": true, "no": false, "list": [1, "two", [3]], "nested": ["k": "v"], "raw": .raw(Array("[0]".utf8))]
        #expect(value.encoded.text == #"{"null":null,"yes":true,"no":false,"list":[1,"two",[3]],"nested":{"k":"v"},"raw":[0]}"#)
    }
}

extension Array where Element == UInt8 {
    /// The bytes as UTF-8 text, for comparing encoded JSON with a literal.
    var text: String { String(decoding: self, as: UTF8.self) }
}
