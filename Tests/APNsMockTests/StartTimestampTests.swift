import APNsMock
import Testing
import TestSlots
import TouchlineCore

/// The mock's own check of a push-to-start's `aps.timestamp` (APNs does not read it; the device
/// does): with a tolerance configured, a start stamped further from the mock's clock than that
/// is `400 BadRequestPayload`, naming by how much; updates are not held to it, and without a
/// tolerance nothing is refused for its timestamp.
@Suite struct StartTimestampTests {
    /// `Sample.start`'s timestamp.
    static let stamped: Int64 = 1_767_286_800

    @Test(.heavy) func aStartStampedBeyondTheToleranceIsRefused() throws {
        let fixture = try TestFixture.get()
        let clock = ManualClock(UnixTime(seconds: Self.stamped + 90))
        var configuration = fixture.configuration(clock: clock)
        configuration.startTimestampTolerance = .seconds(60)
        let mock = try RunningMock(configuration, fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        func start() throws -> CurlResponse {
            try mock.send(mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: try fixture.token(issuedAt: clock.now())),
                                    body: Sample.start(channel: channel)))
        }

        let stale = try start()
        #expect(stale.status == 400 && stale.reason == "BadRequestPayload", "\(stale)")
        #expect(stale.header("x-mock-apns-detail")?.contains("90 s before it arrived (at most 60 s)") == true, "\(stale)")
        clock.set(UnixTime(seconds: Self.stamped + 60))
        #expect(try start().status == 200, "within the tolerance")
        clock.set(UnixTime(seconds: Self.stamped - 61))
        let ahead = try start()
        #expect(ahead.status == 400 && ahead.header("x-mock-apns-detail")?.contains("61 s after it arrived") == true, "\(ahead)")

        // Updates keep the time of their state (an older one is the device's to discard).
        clock.set(UnixTime(seconds: Self.stamped + 86_400))
        let update = try mock.send(mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: try fixture.token(issuedAt: clock.now())),
                                             body: Sample.update))
        #expect(update.status == 200, "\(update)")
    }

    @Test(.heavy) func withoutAToleranceAStartIsNotJudgedByItsTimestamp() throws {
        let fixture = try TestFixture.get()
        let clock = ManualClock(UnixTime(seconds: Self.stamped + 7 * 86_400))
        let mock = try RunningMock(fixture.configuration(clock: clock), fixture: fixture)
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        let response = try mock.send(mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: try fixture.token(issuedAt: clock.now())),
                                               body: Sample.start(channel: channel)))
        #expect(response.status == 200, "\(response)")
    }

    @Test func theToleranceIsReadFromTheCommandLine() throws {
        let fixture = try TestFixture.get()
        let base = ["--bundle-id", "com.example.sports", "--team-id", "TEAM123456", "--key", "KEY1234567=\(fixture.key.publicKeyFile)"]
        #expect(try MockAPNsCommandLine.parse(base + ["--start-timestamp-tolerance", "30"]).configuration.startTimestampTolerance == .seconds(30))
        #expect(try MockAPNsCommandLine.parse(base).configuration.startTimestampTolerance == nil)
        #expect(MockAPNsCommandLine.usage.contains("--start-timestamp-tolerance"))
        let error = #expect(throws: MockAPNsSetupError.self) { try MockAPNsCommandLine.parse(base + ["--start-timestamp-tolerance", "-1"]) }
        #expect(error?.description.contains("--start-timestamp-tolerance") == true, "\(String(describing: error))")
    }
}
