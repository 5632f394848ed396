import APNsMock
import CNGHTTP2
@testable import HTTP2
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime

/// The `silentAfterClientGoaway` fault: once a client says GOAWAY, the mock answers none of its
/// streams still open, although it processed them (as some servers do). A client that says
/// GOAWAY before its last answer, as the gateway's connection retirement once did, is left with
/// requests that were accepted but look unanswered; without the fault, the same client gets
/// every answer.
@Suite struct SilentAfterClientGoawayTests {
    private static let pushes = 6

    /// What one early-GOAWAY client saw, and the mock's counters.
    private struct Run {
        var answered: Int
        var unanswered: Int
        var counters: MockAPNsCounters
    }

    /// Sends ``pushes`` pushes on one connection and says GOAWAY while they wait for their
    /// answers (held back by the mock's latency), as the old retirement did; returns once the
    /// mock has answered or withheld every one.
    private func sendThenSayGoawayEarly(silent: Bool) async throws -> Run {
        let fixture = try TestFixture.get()
        var configuration = fixture.configuration(faults: .init(latency: .seconds(2), silentAfterClientGoaway: silent))
        configuration.initialMaxConcurrentStreams = 100
        let mock = try RunningMock(configuration, fixture: fixture)
        let bearer = "bearer " + (try fixture.token())
        let context = try TLSContext.client(TLSConfiguration(caFile: fixture.certificates.caFile))
        let loop = EventLoop.start(name: "early-goaway")
        defer { loop.stopAndWait() }
        let port = mock.addresses.pushPort
        let client = try loop.sync {
            let client = LoopClient(HTTP2ClientConnection(loop: loop, context: context,
                                                          configuration: HTTP2ConnectionConfiguration(host: "127.0.0.1", port: port)))
            let template = HeaderTemplate(method: .post, authority: "127.0.0.1:\(port)",
                                          headers: [HTTP2Header("apns-push-type", "liveactivity"), HTTP2Header("apns-topic", Sample.liveActivityTopic)])
            for n in 0..<Self.pushes {
                var headers = DynamicHeaders()
                headers.add("authorization", bearer, indexed: true)
                client.connection.send(HTTP2Request(template: template, path: "/3/device/\(Sample.deviceToken(n))", headers: headers,
                                                    body: Sample.update)) { result in
                    if (try? result.get())?.status == 200 { client.answered += 1 }
                }
            }
            // The client's own loop says GOAWAY a quarter of the mock's latency after the pushes
            // went out: after the mock has read them (the frames come in order on the
            // connection), long before their answers, whatever this test's task is held up by.
            client.goaway = LoopTimer(loop: loop) {
                guard let session = client.connection.session else { return }
                nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, NGHTTP2_NO_ERROR.rawValue, nil, 0)
                client.connection.scheduleFlush()
            }
            client.goaway?.schedule(after: .milliseconds(500))
            return client
        }
        defer { try? loop.sync { client.connection.close() } }
        try await eventually("every answer given or withheld") {
            (try? loop.sync { client.answered }) == Self.pushes || mock.server.counters().answersWithheld == Self.pushes
        }
        return Run(answered: try loop.sync { client.answered }, unanswered: try loop.sync { client.connection.stats.inFlight },
                   counters: mock.server.counters())
    }

    @Test(.heavy) func aServerThatStopsAnsweringAfterTheClientsGoawayLeavesProcessedRequestsUnanswered() async throws {
        let run = try await sendThenSayGoawayEarly(silent: true)
        #expect(run.counters.count(endpoint: .device, status: 200) == Self.pushes, "every push was processed")
        #expect(run.answered == 0 && run.unanswered == Self.pushes, "none was answered")
        #expect(run.counters.answersWithheld == Self.pushes)
        #expect(run.counters.description.contains("answers withheld after the client's GOAWAY: \(Self.pushes)"))
    }

    @Test(.heavy) func withoutTheFaultTheSameClientGetsEveryAnswer() async throws {
        let run = try await sendThenSayGoawayEarly(silent: false)
        #expect(run.answered == Self.pushes && run.unanswered == 0)
        #expect(run.counters.answersWithheld == 0)
    }

    @Test func theCommandLineTurnsTheFaultOn() throws {
        let fixture = try TestFixture.get()
        let base = ["--bundle-id", TestFixture.bundleID, "--team-id", TestFixture.teamID, "--key", "\(TestFixture.keyID)=\(fixture.key.publicKeyFile)"]
        #expect(try MockAPNsCommandLine.parse(base + ["--silent-after-client-goaway"]).configuration.faults.silentAfterClientGoaway)
        #expect(try !MockAPNsCommandLine.parse(base).configuration.faults.silentAfterClientGoaway)
        #expect(MockAPNsCommandLine.usage.contains("--silent-after-client-goaway"))
    }

}

/// A connection and the answers it got; used on its loop only (``EventLoop/sync(_:)`` carries it).
private final class LoopClient: @unchecked Sendable {
    let connection: HTTP2ClientConnection
    var answered = 0
    /// Says GOAWAY while the pushes wait for their answers.
    var goaway: LoopTimer?
    init(_ connection: HTTP2ClientConnection) { self.connection = connection }
}
