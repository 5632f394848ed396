import APNs
import Synchronization
import Testing
import TouchlineCore
import TouchlineRuntime

/// When the provider token is signed again, on a manual clock (no process, no socket).
@Suite struct ProviderTokenTests {
    let directory: TemporaryDirectory
    let signer: ProviderTokenSigner
    let clock = ManualClock(UnixTime(seconds: 1_767_225_600))

    init() throws {
        directory = try TemporaryDirectory()
        signer = try ProviderTokenSigner(keyFile: TestKeys.p256(in: directory), keyID: keyID, teamID: teamID)
    }

    private func minutes(_ n: Int) -> Duration { .seconds(n * 60) }

    /// The `iat` claim of a `bearer <jwt>` value.
    private func issuedAt(_ bearer: String) throws -> Int64 {
        #expect(bearer.hasPrefix("bearer "))
        let claims = try #require(Base64URLDecoding.decode(bearer.dropFirst(7).split(separator: ".")[1])).text
        let digits = try #require(claims.split(separator: ":").last?.dropLast())
        return try #require(Int64(digits))
    }

    @Test func theSameTokenIsServedWithinTheRefreshInterval() throws {
        let token = try ProviderToken(signer: signer, clock: clock)
        let first = try token.current()
        #expect(try issuedAt(first) == 1_767_225_600)
        clock.advance(by: minutes(49) + .seconds(59))
        #expect(try token.current() == first)
        #expect(token.statistics.tokensSigned == 1)
    }

    @Test func aNewTokenIsSignedAfterFiftyMinutes() throws {
        let token = try ProviderToken(signer: signer, clock: clock)
        let first = try token.current()
        clock.advance(by: minutes(50))
        let second = try token.current()
        #expect(second != first)
        #expect(try issuedAt(second) == 1_767_225_600 + 50 * 60)
        #expect(token.issuedAt == clock.now())
        #expect(try token.current() == second)
        #expect(token.statistics.tokensSigned == 2)
    }

    /// A rotated key signs the next token at once (a revoked key's token would fail every push
    /// until its renewal), ends a renewal hold, and is refused, changing nothing, when it is of
    /// another team.
    @Test func aReplacedKeySignsTheNextTokenAtOnceAndAnotherTeamsKeyIsRefused() throws {
        let token = try ProviderToken(signer: signer, clock: clock)
        let first = try token.current()
        let next = try ProviderTokenSigner(keyFile: TestKeys.p256(in: directory, name: "AuthKey_NEXT.p8"), keyID: "NEXTKEY001", teamID: teamID)
        _ = try token.invalidate(observedToken: first)  // a young token called expired: a renewal hold
        #expect(token.renewalHold != nil)
        clock.advance(by: .seconds(30))
        try token.check(next)
        #expect(try token.current() == first, "a check changes nothing")
        try token.replaceKey(with: next)
        let rotated = try token.current()
        #expect(rotated != first && token.keyID == "NEXTKEY001" && token.renewalHold == nil)
        #expect(try issuedAt(rotated) == 1_767_225_600 + 30)
        let header = try #require(Base64URLDecoding.decode(rotated.dropFirst(7).split(separator: ".")[0])).text
        #expect(header.contains(#""kid":"NEXTKEY001""#), "\(header)")
        #expect(token.statistics.keyRotations == 1 && token.statistics.tokensSigned == 2)

        let foreign = try ProviderTokenSigner(keyFile: TestKeys.p256(in: directory, name: "AuthKey_FOREIGN.p8"), keyID: "FOREIGN001", teamID: "OTHERTEAM1")
        #expect(throws: APNsConfigurationError.keyOfAnotherTeam(current: teamID, new: "OTHERTEAM1")) { try token.check(foreign) }
        #expect(throws: APNsConfigurationError.keyOfAnotherTeam(current: teamID, new: "OTHERTEAM1")) { try token.replaceKey(with: foreign) }
        #expect(try token.current() == rotated && token.keyID == "NEXTKEY001" && token.statistics.keyRotations == 1)
    }

    @Test func theRefreshIntervalIsConfigurable() throws {
        let token = try ProviderToken(signer: signer, clock: clock, refreshInterval: minutes(20))
        let first = try token.current()
        clock.advance(by: minutes(19))
        #expect(try token.current() == first)
        clock.advance(by: minutes(1))
        #expect(try token.current() != first)
    }

    @Test(arguments: [0, 19 * 60 + 59, 60 * 60 + 1, 24 * 3600])
    func refreshIntervalsOutsideTwentyToSixtyMinutesAreRejected(_ seconds: Int) throws {
        #expect(throws: APNsConfigurationError.refreshIntervalOutOfRange(.seconds(seconds))) {
            try ProviderToken(signer: signer, clock: clock, refreshInterval: .seconds(seconds))
        }
    }

    @Test func theEdgesOfTheWindowAreAccepted() throws {
        #expect(try ProviderToken(signer: signer, clock: clock, refreshInterval: minutes(20)).refreshInterval == minutes(20))
        #expect(try ProviderToken(signer: signer, clock: clock, refreshInterval: minutes(60)).refreshInterval == minutes(60))
        #expect(try ProviderToken(signer: signer, clock: clock).refreshInterval == minutes(50))
    }

    @Test func theConfigurationBuildsATokenAndNamesBadFields() throws {
        var configuration = APNsConfiguration(keyPath: try TestKeys.p256(in: directory, name: "config.p8"), keyID: keyID,
                                              teamID: teamID, bundleID: bundleID, environment: .sandbox)
        #expect(try ProviderToken(configuration: configuration, clock: clock).current().hasPrefix("bearer "))
        configuration.tokenRefreshInterval = minutes(90)
        #expect(throws: APNsConfigurationError.refreshIntervalOutOfRange(minutes(90))) {
            try ProviderToken(configuration: configuration, clock: clock)
        }
    }

    // MARK: - Invalidation after 403 ExpiredProviderToken

    @Test func aFreshTokenIsNotRenewedBecauseThatMeansClockSkew() throws {
        let token = try ProviderToken(signer: signer, clock: clock)
        let first = try token.current()
        clock.advance(by: minutes(5))
        // 20 minutes after the signing, and the safety margin (a minute by default).
        #expect(try token.invalidate(observedToken: first) == .refused(notBefore: UnixTime(seconds: 1_767_225_600 + 21 * 60)))
        #expect(try token.invalidate(observedToken: first) == .refused(notBefore: UnixTime(seconds: 1_767_225_600 + 21 * 60)))
        #expect(try token.current() == first)
        let statistics = token.statistics
        #expect(statistics.tokensSigned == 1)
        #expect(statistics.clockSkewSuspicions == 2)
        #expect(statistics.renewalsRefused == 2)
    }

    @Test func aTokenOlderThanTwentyMinutesIsRenewedOnceAndSkewReported() throws {
        let token = try ProviderToken(signer: signer, clock: clock)
        let first = try token.current()
        clock.advance(by: minutes(25))
        #expect(try token.invalidate(observedToken: first) == .renewed(clockSkewSuspected: true))
        let second = try token.current()
        #expect(second != first)
        // Other requests that carried the old token were rejected too: no second renewal.
        #expect(try token.invalidate(observedToken: first) == .alreadyReplaced)
        #expect(try token.current() == second)
        // And the new token is now fresh: rejecting it does not renew it.
        #expect(try token.invalidate(observedToken: second) == .refused(notBefore: clock.now() + minutes(21)))
        #expect(token.statistics.tokensSigned == 2)
    }

    @Test func aTokenOlderThanSixtyMinutesIsRenewedWithoutSuspicion() throws {
        let token = try ProviderToken(signer: signer, clock: clock, refreshInterval: minutes(60))
        let first = try token.current()
        clock.advance(by: minutes(61))
        #expect(try token.invalidate(observedToken: first) == .renewed(clockSkewSuspected: false))
        #expect(try issuedAt(try token.current()) == clock.now().seconds)
        #expect(token.statistics.clockSkewSuspicions == 0)
    }

    @Test func repeatedRejectionsNeverRenewTwiceWithinTwentyMinutesAndTheMargin() throws {
        let token = try ProviderToken(signer: signer, clock: clock)
        var renewals: [UnixTime] = []
        var last = try token.current()
        var held = 0
        // APNs's clock runs ahead: every request sent is rejected. One request per 30 s for 3 hours.
        for _ in 0..<360 {
            switch try token.authorization() {
            case .bearer(let sent):
                if sent != last { renewals.append(clock.now()) }
                last = sent
                _ = try token.invalidate(observedToken: sent)
            case .hold:
                held += 1
            }
            clock.advance(by: .seconds(30))
        }
        #expect(renewals.count == 8)
        for (earlier, later) in zip(renewals, renewals.dropFirst()) { #expect(later - earlier >= minutes(21)) }
        #expect(held == 360 - 9, "every request but the first with each token waits for the next one")
    }

    // MARK: - Renewal hold (clock skew)

    /// A token rejected 5 minutes after it was signed puts the token in a renewal hold: senders
    /// are told to wait until 20 minutes and the safety margin after the signing, and the first
    /// ask after that signs a new token and ends the hold.
    @Test func aRefusedRenewalHoldsUntilTheTwentyMinuteRuleAndTheMarginAllowANewToken() throws {
        let token = try ProviderToken(signer: signer, clock: clock)
        let first = try token.current()
        let allowed = clock.now() + minutes(21)
        clock.advance(by: minutes(5))
        #expect(try token.authorization() == .bearer(first))
        #expect(try token.invalidate(observedToken: first) == .refused(notBefore: allowed))
        #expect(token.renewalHold == allowed)
        #expect(try token.authorization() == .hold(until: allowed))
        clock.advance(by: minutes(15))
        #expect(try token.authorization() == .hold(until: allowed), "exactly 20 minutes is not enough")
        clock.advance(by: minutes(1) - .seconds(1))
        #expect(try token.authorization() == .hold(until: allowed))
        clock.advance(by: .seconds(1))
        guard case .bearer(let second) = try token.authorization() else { Issue.record("still held"); return }
        #expect(second != first && token.issuedAt == allowed)
        #expect(token.renewalHold == nil)
        #expect(token.statistics.renewalHolds == 1 && token.statistics.tokensSigned == 2)
    }

    /// Once skew was seen, tokens are replaced every 20 minutes and the margin (the least APNs
    /// allows, kept clear of) instead of every refresh interval: a token APNs will call expired
    /// early is replaced before that.
    @Test func afterSkewTokensAreRenewedEveryTwentyMinutesAndTheMargin() throws {
        let token = try ProviderToken(signer: signer, clock: clock)
        let first = try token.current()
        clock.advance(by: minutes(25))
        #expect(try token.invalidate(observedToken: first) == .renewed(clockSkewSuspected: true))
        let second = try token.current()
        clock.advance(by: minutes(21) - .seconds(1))
        #expect(try token.current() == second)
        clock.advance(by: .seconds(1))
        #expect(try token.current() != second)
        #expect(token.statistics.tokensSigned == 3)
    }

    /// The margin past APNs's 20 minutes is the operator's to choose, within 0...10 minutes: a
    /// renewal after an early expiry waits exactly 20 minutes and the margin, never less.
    @Test(arguments: [0, 90, 600])
    func theRenewalMarginIsConfigurable(_ seconds: Int) throws {
        let margin = Duration.seconds(seconds)
        let token = try ProviderToken(signer: signer, clock: clock, renewalMargin: margin)
        #expect(token.renewalMargin == margin && token.renewalSpacing == minutes(20) + margin)
        let first = try token.current()
        let allowed = clock.now() + minutes(20) + margin
        clock.advance(by: minutes(3))
        #expect(try token.invalidate(observedToken: first) == .refused(notBefore: allowed))
        clock.advance(by: minutes(17) + margin - .seconds(1))
        #expect(try token.authorization() == .hold(until: allowed))
        clock.advance(by: .seconds(1))
        #expect(try token.authorization() != .hold(until: allowed))
        #expect(token.issuedAt == allowed)
        // A token rejected past the spacing is renewed at once; before it, it waits.
        let second = try token.current()
        clock.advance(by: minutes(20) + margin)
        #expect(try token.invalidate(observedToken: second) == .renewed(clockSkewSuspected: true))
    }

    @Test(arguments: [-1, 601, 3600])
    func renewalMarginsOutsideZeroToTenMinutesAreRejected(_ seconds: Int) throws {
        #expect(throws: APNsConfigurationError.renewalMarginOutOfRange(.seconds(seconds))) {
            try ProviderToken(signer: signer, clock: clock, renewalMargin: .seconds(seconds))
        }
        var configuration = APNsConfiguration(keyPath: try TestKeys.p256(in: directory, name: "margin.p8"), keyID: keyID,
                                              teamID: teamID, bundleID: bundleID, environment: .sandbox)
        #expect(try ProviderToken(configuration: configuration, clock: clock).renewalMargin == ProviderToken.defaultRenewalMargin)
        configuration.tokenRenewalMargin = .seconds(seconds)
        #expect(throws: APNsConfigurationError.renewalMarginOutOfRange(.seconds(seconds))) {
            try ProviderToken(configuration: configuration, clock: clock)
        }
    }

    @Test func eachHoldAndEachEarlyRenewalIsLoggedAtErrorLevel() throws {
        let lines = Mutex<[String]>([])
        let log = GatewayLog(component: "apns", output: LogOutput { line in lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) } })
        let token = try ProviderToken(signer: signer, clock: clock, log: log)
        let first = try token.current()
        clock.advance(by: minutes(5))
        _ = try token.invalidate(observedToken: first)
        _ = try token.invalidate(observedToken: first)  // the same hold: no second line
        clock.advance(by: minutes(16))
        let second = try token.current()
        clock.advance(by: minutes(21))
        _ = try token.invalidate(observedToken: second)
        let logged = lines.withLock { $0 }
        #expect(logged.count == 3, "\(logged)")
        #expect(logged[0].contains(#""level":"error""#) && logged[0].contains("5 min 0 s") && logged[0].contains("held"))
        #expect(logged[1].contains("renewal hold"))
        #expect(logged[2].contains(#""level":"error""#) && logged[2].contains("NTP"))
    }

    @Test func everyThreadGetsTheSameToken() async throws {
        let token = try ProviderToken(signer: signer, clock: clock)
        let expected = try token.current()
        let seen = try await withThrowingTaskGroup(of: Set<String>.self) { group in
            for _ in 0..<8 {
                group.addTask { Set(try (0..<1000).map { _ in try token.current() }) }
            }
            return try await group.reduce(into: Set<String>()) { $0.formUnion($1) }
        }
        #expect(seen == [expected])
    }
}
