import APNsMock
import Foundation
import Testing
import TestSlots
import TouchlineCore

@Suite(.heavy) struct ProviderTokenTests {
    private func device(_ mock: RunningMock, authorization: String?) -> CurlRequest {
        var headers = Sample.deviceHeaders(token: "").filter { $0.0 != "authorization" }
        if let authorization { headers.append(("authorization", authorization)) }
        return mock.push("/3/device/\(Sample.deviceToken)", headers: headers, body: Sample.update)
    }

    @Test func missingTokenIsRefused() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let responses = try mock.send([device(mock, authorization: nil), device(mock, authorization: "basic abc")])
        #expect(responses.map(\.status) == [403, 403])
        #expect(responses.map(\.reason) == ["MissingProviderToken", "MissingProviderToken"])
    }

    @Test func tokensThatDoNotVerifyAreInvalid() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let now = SystemClock().now().seconds
        let good = try fixture.token()
        let parts = good.split(separator: ".")
        let strangerSigned = try ProviderTokenSigner.sign(keyFile: fixture.strangerKey.privateKeyFile, keyID: TestFixture.keyID,
                                                          teamID: TestFixture.teamID, issuedAt: now)
        let tokens = [
            strangerSigned,
            try fixture.token(keyID: TestFixture.otherKeyID),
            try fixture.token(teamID: "OTHERTEAM1"),
            "\(parts[0]).\(parts[1]).\(parts[2].dropLast(4))AAAA",
            "\(parts[0]).\(parts[1])",
            "not-a-jwt",
            ProviderTokenSigner.base64URL(Array(#"{"alg":"HS256","kid":"KEY1234567"}"#.utf8)) + ".\(parts[1]).\(parts[2])",
            try fixture.token(issuedAt: UnixTime(seconds: now + 3600)),
        ]
        for token in tokens {
            // A fresh connection per token, so the refresh-rate rule does not interfere.
            let response = try mock.send(device(mock, authorization: "bearer \(token)"))
            #expect(response.status == 403, "\(token): \(response)")
            #expect(response.reason == "InvalidProviderToken", "\(token): \(response)")
        }
    }

    @Test func expiredTokenIsRefusedByTheInjectedClock() throws {
        let fixture = try TestFixture.get()
        let clock = ManualClock(UnixTime(seconds: 1_767_225_600))
        let mock = try RunningMock(fixture.configuration(clock: clock), fixture: fixture)
        let justValid = try fixture.token(issuedAt: UnixTime(seconds: 1_767_225_600 - 3600))
        let expired = try fixture.token(issuedAt: UnixTime(seconds: 1_767_225_600 - 3601))
        #expect(try mock.send(device(mock, authorization: "bearer \(justValid)")).status == 200)
        let response = try mock.send(device(mock, authorization: "bearer \(expired)"))
        #expect(response.status == 403)
        #expect(response.reason == "ExpiredProviderToken")
        // The same token that was accepted is refused once the clock moves past its hour.
        clock.advance(by: .seconds(1))
        let later = try mock.send(device(mock, authorization: "bearer \(justValid)"))
        #expect(later.reason == "ExpiredProviderToken")
    }

    @Test func aNewTokenWithinTwentyMinutesOnOneConnectionIsTooMany() throws {
        let fixture = try TestFixture.get()
        let clock = ManualClock(UnixTime(seconds: 1_767_225_600))
        let mock = try RunningMock(fixture.configuration(clock: clock), fixture: fixture)
        let first = try fixture.token(issuedAt: UnixTime(seconds: 1_767_225_600 - 60))
        let second = try fixture.token(issuedAt: UnixTime(seconds: 1_767_225_600))
        let responses = try mock.send([device(mock, authorization: "bearer \(first)"), device(mock, authorization: "bearer \(first)"),
                                       device(mock, authorization: "bearer \(second)"), device(mock, authorization: "bearer \(first)")])
        #expect(responses.map(\.status) == [200, 200, 429, 200])
        #expect(responses[2].reason == "TooManyProviderTokenUpdates")
        // On a new connection the second token is fine.
        #expect(try mock.send(device(mock, authorization: "bearer \(second)")).status == 200)
    }

    /// A clock offset stands for a client whose clock is behind APNs's: with 45 minutes, a token
    /// the client signed 15 minutes ago is more than an hour old for the mock.
    @Test func aTokenClockOffsetAgesTokensAsASkewedClockWould() throws {
        let fixture = try TestFixture.get()
        let clock = ManualClock(UnixTime(seconds: 1_767_225_600))
        let mock = try RunningMock(fixture.configuration(clock: clock, faults: .init(providerTokenClockOffset: .seconds(45 * 60))),
                                   fixture: fixture)
        let fresh = try fixture.token(issuedAt: UnixTime(seconds: 1_767_225_600 - 15 * 60))
        let older = try fixture.token(issuedAt: UnixTime(seconds: 1_767_225_600 - 15 * 60 - 1))
        #expect(try mock.send(device(mock, authorization: "bearer \(fresh)")).status == 200)
        let response = try mock.send(device(mock, authorization: "bearer \(older)"))
        #expect(response.status == 403 && response.reason == "ExpiredProviderToken")
        // A token the client dates now is 45 minutes old for the mock: still valid.
        #expect(try mock.send(device(mock, authorization: "bearer \(try fixture.token(issuedAt: clock.now()))")).status == 200)
    }

    @Test func thePrivateP8KeyCanBeConfiguredDirectly() throws {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration()
        configuration.keys = [.init(keyID: TestFixture.keyID, path: fixture.key.privateKeyFile)]
        let mock = try RunningMock(configuration, fixture: fixture)
        #expect(try mock.send(device(mock, authorization: "bearer \(try fixture.token())")).status == 200)
    }

    @Test func unusableKeyFilesAreReportedAtStart() throws {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration()
        configuration.keys = [.init(keyID: TestFixture.keyID, path: fixture.directory + "/missing.p8")]
        let server = try MockAPNsServer(configuration: configuration)
        #expect(throws: MockAPNsSetupError.self) { try server.start() }

        configuration.keys = [.init(keyID: TestFixture.keyID, path: fixture.certificates.caFile)]
        let notAKey = try MockAPNsServer(configuration: configuration)
        let error = #expect(throws: MockAPNsSetupError.self) { try notAKey.start() }
        #expect(error?.description.contains("neither a PEM public key") == true)
    }
}
