import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineTesting

/// The token registry over the provider API: registration with rotation, listing per user,
/// deletion, and the errors of each. In process on the in-memory backends; the first test also
/// live, on SQLite over loopback.
@Suite("Gateway tokens API", .gatewaysInProcess)
struct GatewayTokensAPITests {
    static func token(_ n: Int) -> String { String(repeating: "ab", count: 31) + String(format: "%04x", n) }

    @Test func tokensAreRegisteredRotatedListedAndDeleted() async throws {
        try await Self.registerRotateListAndDelete(on: .inProcess)
    }

    @Test(.heavy) func tokensAreRegisteredRotatedListedAndDeletedLive() async throws {
        try await Self.registerRotateListAndDelete(on: .live)
    }

    static func registerRotateListAndDelete(on tier: GatewayFixture.Tier) async throws {
        let fixture = try GatewayFixture(tier: tier)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-m1", "storagePolicy": "no-storage"}"#).status == 201)

        let first = try api.request("POST", "/v1/tokens", json: """
            {"token": "\(Self.token(1).uppercased())", "kind": "push-to-start", "userId": "u1", "follows": ["team:ARS"]}
            """)
        #expect(first.status == 201, "\(first.text)")
        #expect(first.json?.string("token") == Self.token(1), "tokens are stored lowercase")
        let update = try api.request("POST", "/v1/tokens", json: #"{"token": "\#(Self.token(2))", "kind": "update", "channelId": "club-m1", "userId": "u1"}"#)
        #expect(update.status == 201, "\(update.text)")
        // A new push-to-start token of the same user replaces the old one.
        #expect(try api.request("POST", "/v1/tokens", json: #"{"token": "\#(Self.token(3))", "kind": "push-to-start", "userId": "u1"}"#).status == 201)

        let listed = try api.request("GET", "/v1/tokens?userId=u1")
        #expect(listed.status == 200, "\(listed.text)")
        guard case .array(let tokens)? = listed.json?[member: "tokens"] else { Issue.record("no tokens in \(listed.text)"); return }
        let active = tokens.filter { $0[member: "active"] == .bool(true) }.compactMap { token -> String? in
            if case .string(let text)? = token[member: "token"] { text } else { nil }
        }
        #expect(Set(active) == [Self.token(2), Self.token(3)])
        #expect(tokens.contains { $0[member: "token"] == .string(Self.token(1)) && $0[member: "active"] == .bool(false) })

        #expect(try api.request("DELETE", "/v1/tokens/\(Self.token(3))").status == 200)
        #expect(try api.request("DELETE", "/v1/tokens/\(Self.token(3))").errorCode == "token_not_found")
    }

    @Test func badRegistrationsAreRefusedWithTheirCause() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        func post(_ body: String) throws -> (Int, String?, String) {
            let response = try api.request("POST", "/v1/tokens", json: body)
            return (response.status, response.errorCode, response.text)
        }
        let short = try post(#"{"token": "abcd", "kind": "push-to-start"}"#)
        #expect(short.0 == 400 && short.2.contains("'token'"), "\(short.2)")
        let kind = try post(#"{"token": "\#(Self.token(1))", "kind": "start"}"#)
        #expect(kind.0 == 400 && kind.2.contains("'kind'"), "\(kind.2)")
        let noChannel = try post(#"{"token": "\#(Self.token(1))", "kind": "update"}"#)
        #expect(noChannel.0 == 400 && noChannel.2.contains("channelId"), "\(noChannel.2)")
        let unknownChannel = try post(#"{"token": "\#(Self.token(1))", "kind": "update", "channelId": "nope"}"#)
        #expect(unknownChannel.0 == 404 && unknownChannel.1 == "channel_not_found")
        let unknownField = try post(#"{"token": "\#(Self.token(1))", "kind": "push-to-start", "team": "ARS"}"#)
        #expect(unknownField.0 == 400 && unknownField.1 == "unknown_field")
        let badFollows = try post(#"{"token": "\#(Self.token(1))", "kind": "push-to-start", "follows": "team:ARS"}"#)
        #expect(badFollows.0 == 400 && badFollows.2.contains("follows"), "\(badFollows.2)")
        #expect(try api.request("GET", "/v1/tokens").errorCode == "invalid_query")

        let provider = fixture.client(key: GatewayFixture.clubKey)
        let forbidden = try provider.request("POST", "/v1/tokens", json: #"{"token": "\#(Self.token(1))", "kind": "push-to-start"}"#)
        #expect(forbidden.status == 403 && forbidden.errorCode == "forbidden")
        #expect(try api.request("GET", "/v1/tokens?userId=nobody").json?[member: "tokens"] == .array([]))
    }

    @Test func aBatchRegistersEveryTokenInOneCommitInOrder() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-m1", "storagePolicy": "no-storage"}"#).status == 201)
        let batch = try api.request("POST", "/v1/tokens/batch", json: """
            {"tokens": [
              {"token": "\(Self.token(1))", "kind": "push-to-start", "userId": "u1", "follows": ["team:ARS"]},
              {"token": "\(Self.token(2))", "kind": "update", "channelId": "club-m1", "userId": "u1"},
              {"token": "\(Self.token(3).uppercased())", "kind": "push-to-start", "userId": "u1"},
              {"token": "\(Self.token(4))", "kind": "push-to-start", "userId": "u2", "environment": "sandbox"}
            ]}
            """)
        #expect(batch.status == 201, "\(batch.text)")
        #expect(batch.json?[member: "registered"] == .integer(4))

        let first = try #require(try api.request("GET", "/v1/tokens?userId=u1").json?[member: "tokens"])
        guard case .array(let tokens) = first else { Issue.record("no tokens listed"); return }
        func isActive(_ n: Int) -> Bool? {
            tokens.first { $0[member: "token"] == .string(Self.token(n)) }.map { $0[member: "active"] == .bool(true) }
        }
        // Registered in order: the later push-to-start token of u1 replaced the earlier one.
        #expect(isActive(1) == false && isActive(2) == true && isActive(3) == true)
        let other = try api.request("GET", "/v1/tokens?userId=u2").json?[member: "tokens"]
        guard case .array(let second)? = other, let only = second.first else { Issue.record("u2 has no token"); return }
        #expect(only[member: "environment"] == .string("sandbox"))
    }

    @Test func aBadBatchNamesTheIndexAndFieldAndWritesNothing() async throws {
        let fixture = try GatewayFixture(tier: .inProcess, maxBodyBytes: 64 * 1024)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        func post(_ body: String) throws -> (status: Int, code: String?, text: String) {
            let response = try api.request("POST", "/v1/tokens/batch", json: body)
            return (response.status, response.errorCode, response.text)
        }
        let good = #"{"token": "\#(Self.token(1))", "kind": "push-to-start", "userId": "u1"}"#
        let badKind = try post(#"{"tokens": [\#(good), {"token": "\#(Self.token(2))", "kind": "start", "userId": "u2"}]}"#)
        #expect(badKind.status == 400 && badKind.code == "invalid_field" && badKind.text.contains("'tokens[1].kind'"), "\(badKind.text)")
        let badToken = try post(#"{"tokens": [\#(good), \#(good), {"token": "xyz", "kind": "push-to-start"}]}"#)
        #expect(badToken.status == 400 && badToken.text.contains("'tokens[2].token'"), "\(badToken.text)")
        let missing = try post(#"{"tokens": [{"kind": "push-to-start"}]}"#)
        #expect(missing.status == 400 && missing.code == "missing_field" && missing.text.contains("'tokens[0].token'"), "\(missing.text)")
        let unknown = try post(#"{"tokens": [\#(good), {"token": "\#(Self.token(2))", "kind": "push-to-start", "team": "ARS"}]}"#)
        #expect(unknown.status == 400 && unknown.code == "unknown_field" && unknown.text.contains("'tokens[1].team'"), "\(unknown.text)")
        let noChannel = try post(#"{"tokens": [\#(good), {"token": "\#(Self.token(2))", "kind": "update", "channelId": "nope"}]}"#)
        #expect(noChannel.status == 404 && noChannel.code == "channel_not_found" && noChannel.text.contains("tokens[1].channelId"),
                "\(noChannel.text)")
        // None of the valid registrations before the bad one was written.
        #expect(try api.request("GET", "/v1/tokens?userId=u1").json?[member: "tokens"] == .array([]))

        #expect(try post(#"{"tokens": []}"#).code == "invalid_field")
        #expect(try post(#"{"tokens": {"token": "\#(Self.token(1))"}}"#).code == "invalid_field")
        #expect(try post(#"{}"#).code == "missing_field")
        let tooMany = try post(#"{"tokens": ["# + Array(repeating: "{}", count: 10_001).joined(separator: ",") + "]}")
        #expect(tooMany.status == 400 && tooMany.text.contains("1 to 10000"), "\(tooMany.text)")

        let provider = fixture.client(key: GatewayFixture.clubKey)
        #expect(try provider.request("POST", "/v1/tokens/batch", json: #"{"tokens": [\#(good)]}"#).errorCode == "forbidden")
        // The batch path is not a token: a DELETE there is refused, not a deletion of "batch".
        let delete = try api.request("DELETE", "/v1/tokens/batch")
        #expect(delete.status == 405 && delete.errorCode == "method_not_allowed", "\(delete.text)")
    }
}
