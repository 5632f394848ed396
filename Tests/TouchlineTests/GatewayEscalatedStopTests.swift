import ChildProcesses
import APNsMock
import Foundation
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineRuntime
import TouchlineTesting

/// The gateway's life as a service: `run(until:)` returns after a graceful shutdown, and a second
/// stop request during it stops at once without losing what was acknowledged.
@Suite("Gateway run and escalated stop", .heavy)
struct GatewayEscalatedStopTests {
    /// APNs that never answers would hold a graceful stop for its whole grace period; a second
    /// request ends it at once, and the push it left unanswered goes out after the next start.
    @Test func aSecondRequestCutsTheGraceShortAndThePendingPushSurvives() async throws {
        let quiet = try await GatewayShutdownTests.QuietChannel.created()
        defer { try? FileManager.default.removeItem(atPath: quiet.shared) }
        let (data, channelsFile, apnsID) = (quiet.data, quiet.channelsFile, quiet.apnsID)

        let silent = try MockAPNsFixture {
            $0.channelsFile = channelsFile
            $0.faults.latency = .seconds(60)
        }
        var configuration = GatewayConfiguration(apnsMode: .apple, apns: silent.gatewaySettings, listenHost: "127.0.0.1", listenPort: 0,
                                                 dataDirectory: data, apiKeys: [.init(key: GatewayFixture.adminKey, scope: .admin)])
        configuration.logLevel = .error
        let gateway = Gateway(configuration: configuration)
        let requests = ShutdownRequests()
        let port = Mutex<Int?>(nil)
        let running = Task { try await gateway.run(until: requests, apnsGracePeriod: .seconds(30)) { bound in port.withLock { $0 = bound } } }
        try await eventually("the gateway started") { port.withLock { $0 } != nil }
        let api = GatewayTestClient(port: try #require(port.withLock { $0 }), key: GatewayFixture.adminKey)
        #expect(try api.request("POST", "/v1/channels/quiet/events", json: #"{"seq": 1, "patch": {"minute": 61}}"#).status == 202)
        try await eventually("the broadcast at the silent APNs") {
            silent.mock.recordedRequests().contains { $0.endpoint == .broadcast && $0.channelID == apnsID }
        }

        requests.request("first")
        try await Task.sleep(for: .milliseconds(500))
        #expect(!requests.isEscalated)
        let escalated = ContinuousClock.now
        requests.request("second")
        try await running.value
        #expect(ContinuousClock.now - escalated < .seconds(5), "the 30 s grace was cut short")
        #expect(requests.isEscalated && requests.reasons == ["first", "second"])
        await silent.shutDown()

        let again = try MockAPNsFixture { $0.channelsFile = channelsFile }
        let third = try GatewayFixture(apns: again.gatewaySettings, directory: data)
        try await eventually("the broadcast kept over the escalated stop") {
            again.mock.recordedRequests().contains { $0.endpoint == .broadcast && $0.channelID == apnsID && $0.bodyText.contains(#""minute":61"#) }
        }
        await third.shutDown(removingData: false)
        await again.shutDown()
    }

    @Test func cancellingTheTaskStopsTheGatewayAndRunReturns() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = GatewayConfiguration(apnsMode: .mock, listenHost: "127.0.0.1", listenPort: 0, dataDirectory: directory,
                                                 apiKeys: [.init(key: GatewayFixture.adminKey, scope: .admin)])
        configuration.logLevel = .error
        let gateway = Gateway(configuration: configuration)
        let requests = ShutdownRequests()
        let port = Mutex<Int?>(nil)
        let running = Task { try await gateway.run(until: requests) { bound in port.withLock { $0 = bound } } }
        try await eventually("the gateway started") { port.withLock { $0 } != nil }
        running.cancel()
        try await running.value
        #expect(gateway.port == nil, "shut down")
        #expect(requests.isEscalated, "a cancelled task stops at once")
    }

    /// A gateway released without a shutdown (a caller's bug, or a test that failed half-way)
    /// stops its loops before it is freed (a loop still running a freed server's callbacks
    /// crashed the test process): the release returns, without waiting on a loop that is gone or
    /// on itself, and nothing is left listening.
    @Test func aGatewayReleasedWhileRunningStopsItsLoopsAndClosesItsPort() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = GatewayConfiguration(apnsMode: .mock, listenHost: "127.0.0.1", listenPort: 0, dataDirectory: directory,
                                                 apiKeys: [.init(key: GatewayFixture.adminKey, scope: .admin)])
        configuration.logLevel = .error
        let held = Mutex<Gateway?>(Gateway(configuration: configuration))
        let port = try await DedicatedThread.run(name: "gateway-start") { try held.withLock { try $0!.start() } }
        #expect(try GatewayTestClient(port: port, key: GatewayFixture.adminKey).request("GET", "/healthz").status == 200)
        await DedicatedThread.run(name: "gateway-release") { held.withLock { $0 = nil } }
        // Nothing listens any more: the connection itself is refused.
        let refused = #expect(throws: GatewayTestClient.Failure.self) {
            try GatewayTestClient(port: port, key: GatewayFixture.adminKey).request("GET", "/healthz")
        }
        #expect(refused?.description.contains("Connection refused") == true, "\(String(describing: refused))")
    }

    /// The real process: SIGTERM starts the graceful stop, a second SIGTERM ends it at once.
    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func aSecondSigtermStopsTheProcessAtOnce() async throws {
        let silent = try MockAPNsFixture { $0.faults.latency = .seconds(60) }
        let directory = silent.directory + "/data"
        let serve = try await ServeProcess(dataDirectory: directory, arguments: silent.serveArguments)
        // A create the silent mock never answers holds both graces (the request's, then APNs').
        let client = serve.admin
        Thread { _ = try? client.request("POST", "/v1/channels", json: #"{"id": "s1", "storagePolicy": "no-storage"}"#) }.start()
        try await eventually("the create at APNs") { silent.mock.recordedRequests().contains { $0.endpoint == .createChannel } }
        // Both signals from a thread of its own, 2.5 s apart: past the 2 s request grace, inside
        // the 3 s APNs grace (without the cut, the stop would take 5 s from the first, the create
        // being never answered). A task could resume seconds late on a busy machine, after both.
        let process = serve.process
        Thread {
            process.signal(SIGTERM)
            Thread.sleep(forTimeInterval: 2.5)
            process.signal(SIGTERM)
        }.start()
        let status = await withCheckedContinuation { (done: CheckedContinuation<Int32, Never>) in
            Thread {
                done.resume(returning: serve.process.wait().status)
            }.start()
        }
        #expect(status == 0)
        try await eventually("the whole log read") { serve.logEnded }
        let log = serve.logLines
        // Judged on the gateway's own clock (its log's timestamps), not on when this test, on a
        // busy machine, got to read the lines: the second signal came inside the APNs grace, and
        // the stop followed at once instead of waiting out the rest of it.
        func loggedAt(_ message: String) -> Date? {
            guard let line = log.first(where: { $0.contains(message) }),
                  let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let time = object["time"] as? String else { return nil }
            let format = ISO8601DateFormatter()
            format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return format.date(from: time)
        }
        let first = try #require(loggedAt("SIGTERM received, shutting down"), "\(log.suffix(5))")
        let second = try #require(loggedAt("SIGTERM received again, stopping now"), "\(log.suffix(5))")
        let stopped = try #require(loggedAt(#""message":"stopped after "#), "\(log.suffix(3))")
        #expect(second.timeIntervalSince(first) < 5, "the second signal came after both graces")
        #expect(stopped.timeIntervalSince(second) < 1.5, "the APNs grace was cut short: \(stopped.timeIntervalSince(second)) s")
        #expect(log.last?.contains(#""message":"stopped after "#) == true, "\(log.suffix(3))")
        await silent.shutDown()
    }
}
