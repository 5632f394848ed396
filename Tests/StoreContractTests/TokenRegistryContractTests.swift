import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineStore

/// The contract of the token registry: ``PersonalStoreWriter``'s token operations and
/// ``TokenRegistryReader``, on every implementation.
@Suite(.heavy) struct TokenRegistryContractTests {
    static func write(_ store: any PersonalStoreUnderTest, _ operations: [TokenOperation]) throws -> TokenWriteSummary {
        try awaitResult { store.personalWriter.submit(summarizing: operations, completion: $0) }.get()
    }

    @Test(arguments: PersonalStoreKind.allCases)
    func aRegistrationReplacesTheTokenItSucceeds(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        _ = try Self.write(store, [
            .registerToken(TokenRecord(token: hexToken(1), kind: .update, channelID: "m1", userID: "fan", registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(2), kind: .update, channelID: "m2", userID: "fan", registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(3), kind: .pushToStart, userID: "fan", registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(4), kind: .pushToStart, registeredAt: t0)),
        ])
        let later = t0 + .seconds(10)
        _ = try Self.write(store, [
            .registerToken(TokenRecord(token: hexToken(11), kind: .update, channelID: "m1", userID: "fan", registeredAt: later)),
            .registerToken(TokenRecord(token: hexToken(13), kind: .pushToStart, userID: "fan", registeredAt: later)),
            .registerToken(TokenRecord(token: hexToken(14), kind: .pushToStart, registeredAt: later)),
        ])
        let reader = try store.personalReader()
        defer { reader.close() }
        let replaced = try #require(try reader.token(hexToken(1)))
        #expect(!replaced.active && replaced.deactivatedAt == later, "the same activity's older update token")
        #expect(try reader.token(hexToken(2))?.active == true, "the user's activity of another match stays")
        #expect(try reader.token(hexToken(3))?.active == false, "the user's older push-to-start token")
        #expect(try reader.token(hexToken(4))?.active == true, "a token without a user replaces nothing")
        #expect(try reader.tokens(userID: "fan", app: "default", limit: 100).map(\.token) == [11, 13, 1, 2, 3].map(hexToken),
                "newest first, ties in token order")
        #expect(try reader.tokens(userID: "fan", app: "default", limit: 2).count == 2)

        // Registering a known token again makes it active with the new registration and follows.
        _ = try Self.write(store, [.registerToken(TokenRecord(token: hexToken(3).uppercased(), kind: .pushToStart, userID: "fan",
                                                              follows: ["team:B", "team:A", "team:A"], registeredAt: later + .seconds(1)))])
        let again = try #require(try reader.token(hexToken(3).uppercased()))
        #expect(again.active && again.deactivatedAt == nil && again.follows == ["team:A", "team:B"] && again.registeredAt == later + .seconds(1))
        #expect(try reader.token(hexToken(13))?.active == false, "and replaces the one registered in between")
    }

    @Test(arguments: PersonalStoreKind.allCases)
    func aDeactivationKeepsATokenRegisteredAfterAPNsTimestamp(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        let registered = t0 + .seconds(100)
        _ = try Self.write(store, (1...3).map { .registerToken(TokenRecord(token: hexToken($0), kind: .pushToStart, registeredAt: registered)) })
        let now = t0 + .seconds(500)
        let before = try Self.write(store, [.deactivateToken(hexToken(1), unlessRegisteredAfter: t0 + .seconds(99), at: now)])
        let equal = try Self.write(store, [.deactivateToken(hexToken(2), unlessRegisteredAfter: registered, at: now)])
        let after = try Self.write(store, [.deactivateToken(hexToken(3), unlessRegisteredAfter: registered + .seconds(1), at: now)])
        let twice = try Self.write(store, [.deactivateToken(hexToken(3), unlessRegisteredAfter: registered + .seconds(1), at: now),
                                           .deactivateToken(hexToken(9), unlessRegisteredAfter: now, at: now)])
        #expect([before, equal, after, twice].map(\.tokensDeactivated) == [0, 1, 1, 0])
        let reader = try store.personalReader()
        defer { reader.close() }
        #expect(try reader.token(hexToken(1))?.active == true, "registered after APNs learned of the failure")
        #expect(try reader.token(hexToken(2))?.deactivatedAt == now)
        #expect(try reader.token(hexToken(3))?.active == false)
    }

    @Test(arguments: PersonalStoreKind.allCases)
    func theFollowsScanVisitsEveryActivePushToStartTokenOnceInOrder(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        let followers = (0..<500).map { $0 * 7 + 1 }
        var operations: [TokenOperation] = followers.map {
            .registerToken(TokenRecord(token: hexToken($0), kind: .pushToStart, follows: ["team:ARS", "team:X"],
                                       environment: $0 % 3 == 0 ? .sandbox : .production, registeredAt: t0))
        }
        operations += [
            .registerToken(TokenRecord(token: hexToken(2), kind: .pushToStart, follows: ["team:CHE"], registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(3), kind: .update, channelID: "m1", follows: ["team:ARS"], registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(4), kind: .pushToStart, follows: ["team:ARS"], registeredAt: t0)),
            .deactivateToken(hexToken(4), unlessRegisteredAfter: t0, at: t0),
            .registerToken(TokenRecord(token: hexToken(5), kind: .pushToStart, follows: ["team:ARS"], registeredAt: t0)),
            .deleteToken(hexToken(5)),
        ]
        _ = try Self.write(store, operations)
        let reader = try store.personalReader()
        defer { reader.close() }
        func walk(_ environment: TokenEnvironment?) throws -> [String] {
            var seen: [String] = []
            while case let page = try reader.pushToStartTokens(following: "team:ARS", app: "default", after: seen.last, limit: 37, environment: environment),
                  !page.isEmpty {
                #expect(page.count <= 37)
                #expect(environment == nil || page.allSatisfy { $0.environment == environment })
                seen += page.map(\.token)
            }
            return seen
        }
        #expect(try walk(nil) == followers.map(hexToken), "every follower once, in token order, nothing else")
        #expect(try walk(.sandbox) == followers.filter { $0 % 3 == 0 }.map(hexToken))
        #expect(try reader.pushToStartTokens(following: "team:ARS", app: "default", after: hexToken(followers.last!), limit: 10, environment: nil).isEmpty)
        #expect(try reader.token(hexToken(5)) == nil, "deleted with its follows")
    }

    @Test(arguments: PersonalStoreKind.allCases)
    func theWholeRegistryPagesInTokenOrderActiveOrNot(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        let numbers = [9, 3, 27, 1, 12, 5, 30]
        _ = try Self.write(store, numbers.map {
            .registerToken(TokenRecord(token: hexToken($0), kind: $0 % 2 == 0 ? .update : .pushToStart, channelID: $0 % 2 == 0 ? "m1" : nil,
                                       follows: ["team:\($0 % 3)"], registeredAt: t0))
        } + [.deactivateToken(hexToken(5), unlessRegisteredAfter: t0, at: t0 + .seconds(1)), .deleteToken(hexToken(30))])
        let reader = try store.personalReader()
        defer { reader.close() }
        var seen: [TokenRecord] = []
        while case let page = try reader.tokens(after: seen.last?.token, limit: 2), !page.isEmpty {
            #expect(page.count <= 2)
            seen += page
        }
        #expect(seen.map(\.token) == [1, 3, 5, 9, 12, 27].map(hexToken), "every token but the deleted one, in token order")
        #expect(seen.first { $0.token == hexToken(5) }.map { !$0.active && $0.deactivatedAt == t0 + .seconds(1) } == true)
        #expect(seen.first { $0.token == hexToken(12) }.map { $0.kind == .update && $0.channelID == "m1" && $0.follows == ["team:0"] } == true)
    }

    @Test(arguments: PersonalStoreKind.allCases)
    func aTokenListAudienceKeepsTheActiveRegisteredTokensInOrder(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        _ = try Self.write(store, [
            .registerToken(TokenRecord(token: hexToken(1), kind: .update, channelID: "m1", registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(2), kind: .pushToStart, registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(3), kind: .pushToStart, environment: .sandbox, registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(4), kind: .pushToStart, registeredAt: t0)),
            .deactivateToken(hexToken(4), unlessRegisteredAfter: t0, at: t0),
        ])
        let reader = try store.personalReader()
        defer { reader.close() }
        let asked = [hexToken(3), hexToken(9), hexToken(4), hexToken(1).uppercased(), hexToken(2)]
        #expect(try reader.activeTokens(among: asked, app: "default", environment: nil) == [1, 2, 3].map(hexToken), "any kind, token order, lowercase")
        #expect(try reader.activeTokens(among: asked, app: "default", environment: .production) == [1, 2].map(hexToken))
        #expect(try reader.activeTokens(among: [], app: "default", environment: nil).isEmpty)
    }

    /// A token belongs to the app it was registered for: every audience read of one app skips
    /// another app's tokens, a user's push-to-start token replaces only that app's, and a token
    /// registered again for another app moves to it.
    @Test(arguments: PersonalStoreKind.allCases)
    func everyAudienceReadKeepsToOneAppsTokens(kind: PersonalStoreKind) async throws {
        let store = try await kind.open()
        _ = try Self.write(store, [
            .registerToken(TokenRecord(token: hexToken(1), kind: .pushToStart, userID: "fan", follows: ["team:ARS"], registeredAt: t0)),
            .registerToken(TokenRecord(token: hexToken(2), kind: .pushToStart, userID: "fan", follows: ["team:ARS"], registeredAt: t0 + .seconds(1),
                                       app: "tv")),
            .registerToken(TokenRecord(token: hexToken(3), kind: .update, channelID: "tv/m1", userID: "fan", registeredAt: t0, app: "tv")),
        ])
        let reader = try store.personalReader()
        #expect(try reader.token(hexToken(1))?.active == true, "the tv app's push-to-start token replaced nothing of the default app")
        #expect(try reader.token(hexToken(2))?.app == "tv")
        #expect(try reader.tokens(userID: "fan", app: "default", limit: 10).map(\.token) == [hexToken(1)])
        #expect(try reader.tokens(userID: "fan", app: "tv", limit: 10).map(\.token) == [hexToken(2), hexToken(3)])
        #expect(try reader.pushToStartTokens(following: "team:ARS", app: "default", after: nil, limit: 10, environment: nil).map(\.token) == [hexToken(1)])
        #expect(try reader.pushToStartTokens(following: "team:ARS", app: "tv", after: nil, limit: 10, environment: nil).map(\.token) == [hexToken(2)])
        let all = [1, 2, 3].map(hexToken)
        #expect(try reader.activeTokens(among: all, app: "default", environment: nil) == [hexToken(1)])
        #expect(try reader.activeTokens(among: all, app: "tv", environment: nil) == [hexToken(2), hexToken(3)])
        reader.close()

        _ = try Self.write(store, [.registerToken(TokenRecord(token: hexToken(1), kind: .pushToStart, userID: "fan", registeredAt: t0 + .seconds(2),
                                                              app: "tv"))])
        let again = try store.personalReader()
        defer { again.close() }
        #expect(try again.token(hexToken(1))?.app == "tv", "registered again for tv: it is tv's now")
        #expect(try again.token(hexToken(2))?.active == false, "and it replaced the user's older tv push-to-start token")
        #expect(try again.tokens(userID: "fan", app: "default", limit: 10).isEmpty)
    }

}
