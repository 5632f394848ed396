@testable import APNsMock
import Testing
import TestSlots
import TouchlineCore

/// The per-connection token rules in virtual time (no network): cache, expiry, refresh rate.
@Suite(.heavy) struct ProviderTokenSessionTests {
    private let start: Int64 = 1_767_225_600

    /// The reason `session` refuses the `authorization` value `header` with, or nil when it accepts it.
    private func check(_ session: inout ProviderTokenSession, _ header: String?, at now: Int64,
                       _ verifier: ProviderTokenVerifier) -> MockAPNsReason? {
        guard let header else { return check(&session, bytes: nil, at: now, verifier) }
        return Array(header.utf8).withUnsafeBytes { check(&session, bytes: $0, at: now, verifier) }
    }

    private func check(_ session: inout ProviderTokenSession, bytes: UnsafeRawBufferPointer?, at now: Int64,
                       _ verifier: ProviderTokenVerifier) -> MockAPNsReason? {
        do throws(MockAPNsRejection) {
            try session.authorize(bytes, now: now, verifier: verifier)
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
        #expect(check(&session, "bearer \(token)", at: start, verifier) == nil)
        #expect(check(&session, "bearer \(token)", at: start + 3600, verifier) == nil)
        #expect(check(&session, "bearer \(token)", at: start + 3601, verifier)
                == .expiredProviderToken)
    }

    @Test func aNewTokenIsAcceptedOnlyTwentyMinutesAfterThePrevious() throws {
        let fixture = try TestFixture.get()
        let verifier = try ProviderTokenVerifier(teamID: TestFixture.teamID, keys: [.init(keyID: TestFixture.keyID, path: fixture.key.publicKeyFile)])
        let first = try fixture.token(issuedAt: UnixTime(seconds: start))
        let second = try fixture.token(issuedAt: UnixTime(seconds: start + 1199))
        let third = try fixture.token(issuedAt: UnixTime(seconds: start + 1200))
        var session = ProviderTokenSession()
        #expect(check(&session, "bearer \(first)", at: start, verifier) == nil)
        #expect(check(&session, "bearer \(second)", at: start + 1199, verifier)
                == .tooManyProviderTokenUpdates)
        // The refused token did not become current: the first one still works.
        #expect(check(&session, "bearer \(first)", at: start + 1199, verifier) == nil)
        #expect(check(&session, "bearer \(third)", at: start + 1200, verifier) == nil)
        #expect(check(&session, "bearer \(first)", at: start + 1201, verifier)
                == .tooManyProviderTokenUpdates)
    }

    @Test func theBearerSchemeIsRequired() throws {
        let fixture = try TestFixture.get()
        let verifier = try ProviderTokenVerifier(teamID: TestFixture.teamID, keys: [.init(keyID: TestFixture.keyID, path: fixture.key.publicKeyFile)])
        let token = try fixture.token(issuedAt: UnixTime(seconds: start))
        var session = ProviderTokenSession()
        #expect(check(&session, nil, at: start, verifier) == .missingProviderToken)
        #expect(check(&session, token, at: start, verifier)
                == .missingProviderToken)
        #expect(check(&session, "Bearer \(token)", at: start, verifier) == nil)
    }
}
