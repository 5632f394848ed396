import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Accepted means deliverable: every input is checked against what it will make (the state,
/// the push), so nothing acknowledged can later be refused by APNs or by the gateway itself.
/// In process on the in-memory backends; the first test also live, on SQLite over loopback.
@Suite("Gateway input validation", .gatewaysInProcess)
struct GatewayInputValidationTests {
    static func nestedPatch(_ levels: Int) -> String {
        String(repeating: #"{"a":"#, count: levels - 1) + "1" + String(repeating: "}", count: levels - 1)
    }

    @Test func eventsAreBoundedAndValidatedEvenWhenTheyRepeat() async throws {
        try await Self.eventsAreBoundedAndValidated(on: .inProcess)
    }

    @Test(.heavy) func eventsAreBoundedAndValidatedEvenWhenTheyRepeatLive() async throws {
        try await Self.eventsAreBoundedAndValidated(on: .live)
    }

    static func eventsAreBoundedAndValidated(on tier: GatewayFixture.Tier) async throws {
        let fixture = try GatewayFixture(tier: tier, maxBodyBytes: 1 << 20)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "v1", "storagePolicy": "no-storage"}"#).status == 201)
        func post(_ body: String) throws -> GatewayTestClient.Response { try api.request("POST", "/v1/channels/v1/events", json: body) }

        // seq is bounded, so no provider can lock a channel at Int64.max.
        let locked = try post(#"{"seq": 9223372036854775807, "patch": {"a": 1}}"#)
        #expect(locked.status == 400 && locked.text.contains("9007199254740991"), "\(locked.text)")
        #expect(try post(#"{"seq": 1, "patch": {"a": 1}}"#).status == 202)
        // A repeat is validated before it is counted as a duplicate.
        let badRepeat = try post(#"{"seq": 1, "patch": 5}"#)
        #expect(badRepeat.status == 422 && badRepeat.errorCode == "invalid_event", "\(badRepeat.text)")
        let badStale = try post(#"{"events": [{"seq": 2, "patch": {"a": 2}}, {"seq": 1, "type": "nonsense"}]}"#)
        #expect(badStale.status == 422 && badStale.text.contains("events[1]"), "\(badStale.text)")
        #expect(try api.request("GET", "/v1/channels/v1").json?.integer("lastSeq") == 1, "a refused batch changed the channel")

        // A patch that would make a push deeper than APNs parses is refused, at any depth over the limit.
        let deep = try post(#"{"seq": 2, "patch": \#(Self.nestedPatch(64))}"#)
        #expect(deep.status == 422 && deep.errorCode == "content_state_too_large", "\(deep.text)")
        #expect(try post(#"{"seq": 2, "patch": \#(Self.nestedPatch(ContentStateLimits.maximumDepth))}"#).status == 202)

        // 120,000 members in a 1 MiB body: refused by its size before it is merged.
        let digits = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        let members = (0..<120_000).map { n in #""\#(digits[n / 3844])\#(digits[n / 62 % 62])\#(digits[n % 62])":0"# }.joined(separator: ",")
        let huge = try post(#"{"seq": 3, "patch": {\#(members)}}"#)
        #expect(huge.status == 422 && huge.text.contains("more than 1000 members"), "\(huge.text.prefix(300))")
        // The loop was not held: another request is answered (not a timing claim: just not stuck).
        #expect(try api.request("GET", "/healthz", key: .some(nil)).status == 200)

        let tooMany = "{\"events\": [" + (3...1_003).map { #"{"seq": \#($0), "patch": {"n": \#($0)}}"# }.joined(separator: ",") + "]}"
        let batch = try post(tooMany)
        #expect(batch.status == 400 && batch.text.contains("1 to 1000 events"), "\(batch.text.prefix(200))")
    }

    /// A goal past the largest score the match state holds is refused, not folded into a state
    /// that every later event would then fail to read.
    @Test func theReducersResultIsHeldToTheStateBounds() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let body = #"{"id": "s1", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#
        #expect(try api.request("POST", "/v1/channels", json: body).status == 201)
        func post(_ body: String) throws -> GatewayTestClient.Response { try api.request("POST", "/v1/channels/s1/events", json: body) }
        let tooHigh = try post(#"{"seq": 1, "patch": {"homeScore": 2147483647}}"#)
        #expect(tooHigh.status == 422 && tooHigh.text.contains("homeScore"), "\(tooHigh.text)")
        #expect(try post(#"{"seq": 1, "patch": {"homeScore": 999}}"#).status == 202)
        let goal = try post(#"{"seq": 2, "type": "goal", "team": "home", "minute": 90}"#)
        #expect(goal.status == 422 && goal.text.contains("homeScore") && goal.text.contains("999"), "\(goal.text)")
        #expect(try post(#"{"seq": 2, "type": "goal", "team": "away", "minute": 90}"#).status == 202, "later events still fold")
    }

    @Test func personalInputIsBoundedAndStoredWhole() async throws {
        let fixture = try GatewayFixture(tier: .inProcess, maxBodyBytes: 2 << 20)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let token = GatewayPersonalAPITests.token(1)
        func register(_ fields: String) throws -> GatewayTestClient.Response {
            try api.request("POST", "/v1/tokens", json: #"{"token": "\#(token)", "kind": "push-to-start", \#(fields)}"#)
        }
        let odd = try api.request("POST", "/v1/tokens", json: #"{"token": "\#(token)a", "kind": "push-to-start"}"#)
        #expect(odd.status == 400 && odd.text.contains("even number"), "\(odd.text)")
        let longUser = try register(#""userId": "\#(String(repeating: "u", count: 500_000))""#)
        #expect(longUser.status == 400 && longUser.text.contains("'userId'"), "\(longUser.text.prefix(200))")
        let nulUser = try register(#""userId": "fan\u0000x""#)
        #expect(nulUser.status == 400 && nulUser.text.contains("control characters"), "\(nulUser.text)")
        let follows = "[" + (0..<10_000).map { #""t:\#($0)""# }.joined(separator: ",") + "]"
        let manyFollows = try register(#""follows": \#(follows)"#)
        #expect(manyFollows.status == 400 && manyFollows.text.contains("at most 100"), "\(manyFollows.text.prefix(200))")
        let nulFollow = try register(#""follows": ["team:ARS\u0000x"]"#)
        #expect(nulFollow.status == 400, "\(nulFollow.text)")

        let start = try api.request("POST", "/v1/personal", json: """
            {"audience": {"follows": "team:ARS"}, "event": "start", "contentState": {}, "attributesType": "M", "attributes": {}}
            """)
        #expect(start.status == 400 && start.text.contains("'alert'"), "\(start.text)")
        let emptyAlert = try api.request("POST", "/v1/personal", json: """
            {"audience": {"token": "\(token)"}, "event": "update", "contentState": {}, "alert": {"title": "", "body": "b"}}
            """)
        #expect(emptyAlert.status == 400 && emptyAlert.text.contains("'alert.title'"), "\(emptyAlert.text)")
        let deepState = try api.request("POST", "/v1/personal", json: """
            {"audience": {"token": "\(token)"}, "event": "update", "contentState": \(Self.nestedPatch(40))}
            """)
        #expect(deepState.status == 422 && deepState.errorCode == "content_state_too_large", "\(deepState.text)")
    }

    /// Every control, format and separator character is refused in a user id and a follow,
    /// wherever one is given (a registration, a personal audience, a kickoff, a token listing),
    /// naming its code point; other characters beyond ASCII are kept.
    @Test func identifiersRefuseControlFormatAndSeparatorCharacters() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        let token = GatewayPersonalAPITests.token(1)
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "k1", "storagePolicy": "no-storage"}"#).status == 201)
        for scalar in IdentifierCharactersTests.refused {
            let code = String(format: "U+%04X", scalar.value)
            let text = "fan\\u\(code.dropFirst(2))x"
            let user = try api.request("POST", "/v1/tokens", json: #"{"token": "\#(token)", "kind": "push-to-start", "userId": "\#(text)"}"#)
            #expect(user.status == 400 && user.errorCode == "invalid_field" && user.text.contains("'userId'") && user.text.contains(code),
                    "\(code): \(user.text)")
            let follow = try api.request("POST", "/v1/tokens", json: #"{"token": "\#(token)", "kind": "push-to-start", "follows": ["\#(text)"]}"#)
            #expect(follow.status == 400 && follow.errorCode == "invalid_field" && follow.text.contains(code), "\(code): \(follow.text)")
            let audience = try api.request("POST", "/v1/personal", json: """
                {"audience": {"userId": "\(text)"}, "event": "update", "contentState": {}}
                """)
            #expect(audience.status == 400 && audience.errorCode == "invalid_field" && audience.text.contains(code), "\(code): \(audience.text)")
            let kickoff = try api.request("POST", "/v1/channels/k1/start", json: """
                {"audience": {"follows": "\(text)"}, "attributesType": "M", "attributes": {}, "alert": {"title": "t", "body": "b"}}
                """)
            #expect(kickoff.status == 400 && kickoff.errorCode == "invalid_field" && kickoff.text.contains(code), "\(code): \(kickoff.text)")
        }
        let listed = try api.request("GET", "/v1/tokens?userId=fan%E2%80%A8x")
        #expect(listed.status == 400 && listed.errorCode == "invalid_query" && listed.text.contains("U+2028"), "\(listed.text)")
        let kept = try api.request("POST", "/v1/tokens", json: #"{"token": "\#(token)", "kind": "push-to-start", "userId": "fän 東京 😀", "follows": ["team:ÜRÜN"]}"#)
        #expect(kept.status == 201 && kept.json?.string("userId") == "fän 東京 😀", "\(kept.text)")
    }

    /// Member names compare by code units: two canonically equivalent names are two members.
    @Test func equivalentMemberNamesAreDistinct() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let created = try fixture.admin.request("POST", "/v1/channels", json: #"{"id": "u1", "storagePolicy": "no-storage", "initialState": {"\u00e9": 1, "e\u0301": 2}}"#)
        #expect(created.status == 201, "\(created.text)")
        guard case .object(let members)? = created.json?[member: "contentState"] else { Issue.record("\(created.text)"); return }
        #expect(members.count == 2)
    }
}
