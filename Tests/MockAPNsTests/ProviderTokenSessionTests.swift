@testable import MockAPNs
import Testing
import TouchlineCore

/// The per-connection token rules in virtual time (no network): cache, expiry, refresh rate.
@Suite struct ProviderTokenSessionTests {
    private let start: Int64 = 1_767_225_600

    private func header(_ token: String) -> ArraySlice<UInt8> { ArraySlice(Array("bearer \(token)".utf8)) }

    private func reason(_ body: () throws(MockAPNsRejection) -> Void) -> MockAPNsReason? {
        do {
            try body()
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func aCachedTokenStillExpiresAfterAnHour() throws {
        let fixture = try TestFixture.get()
        let verifier = try ProviderTokenVerifier(teamID: TestFixture.teamID, keys: [.init(keyID: TestFixture.keyID, path: fixture.key.publicKeyFile)])
        let token = try fixture.token(issuedAt: UnixTime(seconds: start))
        var session = ProviderTokenSession()
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(header(token), now: start, verifier: verifier) } == nil)
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(header(token), now: start + 3600, verifier: verifier) } == nil)
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(header(token), now: start + 3601, verifier: verifier) }
                == .expiredProviderToken)
    }

    @Test func aNewTokenIsAcceptedOnlyTwentyMinutesAfterThePrevious() throws {
        let fixture = try TestFixture.get()
        let verifier = try ProviderTokenVerifier(teamID: TestFixture.teamID, keys: [.init(keyID: TestFixture.keyID, path: fixture.key.publicKeyFile)])
        let first = try fixture.token(issuedAt: UnixTime(seconds: start))
        let second = try fixture.token(issuedAt: UnixTime(seconds: start + 1199))
        let third = try fixture.token(issuedAt: UnixTime(seconds: start + 1200))
        var session = ProviderTokenSession()
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(header(first), now: start, verifier: verifier) } == nil)
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(header(second), now: start + 1199, verifier: verifier) }
                == .tooManyProviderTokenUpdates)
        // The refused token did not become current: the first one still works.
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(header(first), now: start + 1199, verifier: verifier) } == nil)
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(header(third), now: start + 1200, verifier: verifier) } == nil)
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(header(first), now: start + 1201, verifier: verifier) }
                == .tooManyProviderTokenUpdates)
    }

    @Test func theBearerSchemeIsRequired() throws {
        let fixture = try TestFixture.get()
        let verifier = try ProviderTokenVerifier(teamID: TestFixture.teamID, keys: [.init(keyID: TestFixture.keyID, path: fixture.key.publicKeyFile)])
        let token = try fixture.token(issuedAt: UnixTime(seconds: start))
        var session = ProviderTokenSession()
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(nil, now: start, verifier: verifier) } == .missingProviderToken)
        #expect(reason { () throws(MockAPNsRejection) in try session.authorize(ArraySlice(Array(token.utf8)), now: start, verifier: verifier) }
                == .missingProviderToken)
        #expect(reason { () throws(MockAPNsRejection) in
            try session.authorize(ArraySlice(Array("Bearer \(token)".utf8)), now: start, verifier: verifier)
        } == nil)
    }
}
