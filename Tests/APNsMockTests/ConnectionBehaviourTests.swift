import APNsMock
import Foundation
import Testing
import TestSlots
import TouchlineCore

@Suite(.heavy) struct ConnectionBehaviourTests {
    /// The values of every SETTINGS_MAX_CONCURRENT_STREAMS the client received, in order.
    private func receivedStreamLimits(_ trace: String) -> [Int] {
        var limits: [Int] = []
        var inReceivedSettings = false
        for line in trace.split(separator: "\n") {
            if line.contains("recv SETTINGS frame") { inReceivedSettings = true; continue }
            if line.contains(" frame ") { inReceivedSettings = false; continue }
            if inReceivedSettings, line.contains("SETTINGS_MAX_CONCURRENT_STREAMS(0x03):"),
               let value = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .init(charactersIn: "] "))) }) {
                limits.append(value)
            }
        }
        return limits
    }

    private func deviceURLs(_ mock: RunningMock, count: Int) -> [String] {
        (0..<count).map { "https://127.0.0.1:\(mock.addresses.pushPort)/3/device/\(Sample.deviceToken($0))" }
    }

    private func refusedStreams(_ trace: String) -> Int {
        trace.components(separatedBy: "error_code=REFUSED_STREAM").count - 1
    }

    private func statusCount(_ trace: String, _ status: Int) -> Int {
        trace.components(separatedBy: ":status: \(status)").count - 1
    }

    /// nghttp may open all its streams before the server's SETTINGS arrive (as a careless client
    /// would) or wait for them; either way only one stream may be served until a request
    /// succeeded, and the rest must be refused, never processed.
    @Test func streamLimitStartsAtOneAndIsRaisedAfterTheFirstAcceptedRequest() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let trace = try NGHTTP.trace(urls: deviceURLs(mock, count: 3), headers: Sample.deviceHeaders(token: try fixture.token()), body: Sample.update)
        #expect(receivedStreamLimits(trace) == [1, 1000], "\(trace)")
        let served = statusCount(trace, 200)
        #expect(served >= 1, "\(trace)")
        #expect(served + refusedStreams(trace) == 3, "\(trace)")
        #expect(mock.server.recordedRequests().count == served)
        #expect(mock.server.counters().framesRejected == refusedStreams(trace), "every refused stream is counted")
    }

    @Test func streamLimitStaysAtOneWhileRequestsAreRejected() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(), fixture: fixture)
        let headers = Sample.deviceHeaders(token: try fixture.token()).filter { $0.0 != "apns-topic" }
        let trace = try NGHTTP.trace(urls: deviceURLs(mock, count: 2), headers: headers, body: Sample.update)
        #expect(receivedStreamLimits(trace) == [1], "\(trace)")
        #expect(statusCount(trace, 400) >= 1, "\(trace)")
        #expect(statusCount(trace, 400) + refusedStreams(trace) == 2, "\(trace)")
    }

    @Test func aRaisedLimitAllowsConcurrentStreams() throws {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration()
        configuration.initialMaxConcurrentStreams = 1000
        let mock = try RunningMock(configuration, fixture: fixture)
        let trace = try NGHTTP.trace(urls: deviceURLs(mock, count: 5), headers: Sample.deviceHeaders(token: try fixture.token()), body: Sample.update)
        #expect(receivedStreamLimits(trace) == [1000], "\(trace)")
        #expect(statusCount(trace, 200) == 5, "\(trace)")
    }

    @Test func goawayAfterNRequestsServesThemAndClosesTheConnection() throws {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration(faults: .init(goawayAfterRequests: 2, goawayReason: "Shutdown"))
        configuration.initialMaxConcurrentStreams = 1000
        let mock = try RunningMock(configuration, fixture: fixture)
        let trace = try NGHTTP.trace(urls: deviceURLs(mock, count: 4), headers: Sample.deviceHeaders(token: try fixture.token()),
                                     body: Sample.update)
        let lines = trace.split(separator: "\n").map(String.init)
        let goaway = try #require(lines.firstIndex { $0.contains("recv GOAWAY frame") }, "\(trace)")
        #expect(lines[goaway + 1].contains("last_stream_id=3"), "\(trace)")
        #expect(lines[goaway + 1].contains("NO_ERROR"), "\(trace)")
        #expect(lines[goaway + 1].contains(#"{"reason":"Shutdown"}"#), "\(trace)")
        #expect(statusCount(trace, 200) == 2, "\(trace)")
        #expect(mock.server.counters().count(endpoint: .device, status: 200) == 2)
        #expect(mock.server.recordedRequests().map(\.streamID) == [1, 3])
    }

    @Test func afterGoawayTheClientMovesToANewConnection() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(faults: .init(goawayAfterRequests: 2)), fixture: fixture)
        let token = try fixture.token()
        let requests = (0..<4).map { mock.push("/3/device/\(Sample.deviceToken($0))", headers: Sample.deviceHeaders(token: token), body: Sample.update) }
        #expect(try mock.send(requests).map(\.status) == [200, 200, 200, 200])
        #expect(mock.server.recordedRequests().map(\.connection) == [1, 1, 2, 2])
    }

    @Test func unregisteredTokensGet410WithTheirTimestamp() throws {
        let fixture = try TestFixture.get()
        let clock = ManualClock(UnixTime(seconds: 1_767_225_600))
        let gone = Sample.deviceToken(7)
        let mock = try RunningMock(fixture.configuration(clock: clock, faults: .init(unregisteredTokens: [gone.uppercased()])), fixture: fixture)
        let token = try fixture.token(issuedAt: clock.now())
        mock.server.unregister(token: Sample.deviceToken(8), at: UnixTime(seconds: 1_767_000_000))
        let responses = try mock.send([Sample.deviceToken, gone, Sample.deviceToken(8)].map {
            mock.push("/3/device/\($0)", headers: Sample.deviceHeaders(token: token), body: Sample.update)
        })
        #expect(responses.map(\.status) == [200, 410, 410])
        let bodies = responses.dropFirst().map { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
        #expect(bodies[0]?["reason"] as? String == "Unregistered")
        #expect(bodies[0]?["timestamp"] as? Int == 1_767_225_600_000)
        #expect(bodies[1]?["timestamp"] as? Int == 1_767_000_000_000)
    }

    @Test(arguments: [(MockAPNsConfiguration.Faults(tooManyRequestsRate: 1), 429, "TooManyRequests"),
                      (MockAPNsConfiguration.Faults(internalServerErrorRate: 1), 500, "InternalServerError"),
                      (MockAPNsConfiguration.Faults(shutdownRate: 1), 503, "Shutdown")])
    func injectedErrorRates(_ faults: MockAPNsConfiguration.Faults, status: Int, reason: String) throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(faults: faults), fixture: fixture)
        let token = try fixture.token()
        let channel = try #require(mock.server.createChannel(storagePolicy: 0))
        let responses = try mock.send([
            mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: token), body: Sample.update),
            mock.push(BroadcastTests.path, headers: Sample.broadcastHeaders(token: token, channel: channel), body: Sample.update),
        ])
        #expect(responses.map(\.status) == [status, status])
        #expect(responses.map(\.reason) == [reason, reason])
        // Channel management is outside the default fault endpoints.
        let list = try mock.send(mock.manage(ChannelManagementTests.allChannels, headers: [("authorization", "bearer \(token)")], method: "GET"))
        #expect(list.status == 200)
    }

    @Test func faultDiceAreDeterministicPerSeed() throws {
        let fixture = try TestFixture.get()
        func statuses(seed: UInt64) throws -> [Int] {
            let faults = MockAPNsConfiguration.Faults(tooManyRequestsRate: 0.3, internalServerErrorRate: 0.3, seed: seed)
            let mock = try RunningMock(fixture.configuration(faults: faults), fixture: fixture)
            let token = try fixture.token()
            let request = mock.push("/3/device/\(Sample.deviceToken)", headers: Sample.deviceHeaders(token: token), body: Sample.update)
            return try mock.send(Array(repeating: request, count: 20)).map(\.status)
        }
        let first = try statuses(seed: 42)
        #expect(try statuses(seed: 42) == first)
        #expect(Set(first).isSubset(of: [200, 429, 500]))
        #expect(Set(first).count > 1)
    }

    @Test func latencyDelaysButStillAnswers() throws {
        let fixture = try TestFixture.get()
        let mock = try RunningMock(fixture.configuration(faults: .init(latency: .milliseconds(50))), fixture: fixture)
        let token = try fixture.token()
        let requests = (0..<5).map {
            mock.push("/3/device/\(Sample.deviceToken($0))", headers: Sample.deviceHeaders(token: token), body: Sample.update)
        }
        #expect(try mock.send(requests).map(\.status) == [200, 200, 200, 200, 200])
    }

    @Test func severalLoopsShareTheWork() throws {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration()
        configuration.threads = 3
        let mock = try RunningMock(configuration, fixture: fixture)
        let token = try fixture.token()
        for i in 0..<6 {
            let response = try mock.send(mock.push("/3/device/\(Sample.deviceToken(i))", headers: Sample.deviceHeaders(token: token), body: Sample.update))
            #expect(response.status == 200)
        }
        let counters = mock.server.counters()
        #expect(counters.connectionsAccepted == 6)
        #expect(counters.count(endpoint: .device, status: 200) == 6)
        #expect(Set(mock.server.recordedRequests().map(\.connection)) == Set(1...6))
    }
}
