import ChildProcesses
import APNsMock
import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineCore
import TouchlineTesting

/// `touchline serve` stopped with SIGTERM while providers keep posting: it exits 0 in bounded
/// time, and every event it acknowledged (202) is there after a restart on the same data.
@Suite("Gateway graceful shutdown", .heavy)
struct GatewayShutdownTests {
    /// What one provider thread saw: the last `seq` acknowledged, the last one tried, and how
    /// its posting ended once the gateway went away.
    struct ProviderRecord: Sendable {
        var lastAcknowledged = 0
        var lastAttempted = 0
        var ending = ""
    }

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func sigtermUnderLoadLosesNothingAcknowledged() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await ServeProcess(dataDirectory: directory)
        let channels = (0..<4).map { "stop-\($0)" }
        for channel in channels {
            let created = try first.admin.request("POST", "/v1/channels", json: #"{"id": "\#(channel)", "storagePolicy": "no-storage"}"#)
            try #require(created.status == 201, "\(created.text)")
        }

        let records = Mutex([String: ProviderRecord]())
        let finished = DispatchGroup()
        for channel in channels {
            finished.enter()
            Thread { [port = first.port] in
                defer { finished.leave() }
                let api = GatewayTestClient(port: port, key: GatewayFixture.adminKey)
                var record = ProviderRecord()
                for seq in 1... {
                    record.lastAttempted = seq
                    do {
                        let posted = try api.request("POST", "/v1/channels/\(channel)/events",
                                                     json: #"{"seq": \#(seq), "patch": {"minute": \#(seq)}}"#)
                        guard posted.status == 202 else {
                            record.ending = "\(posted.status) \(posted.errorCode ?? posted.text)"
                            break
                        }
                        record.lastAcknowledged = seq
                        records.withLock { $0[channel] = record }
                    } catch {
                        record.ending = "\(error)"
                        break
                    }
                }
                records.withLock { $0[channel] = record }
            }.start()
        }
        // The signal lands in steady load: every provider has had a few dozen events acknowledged.
        let loadDeadline = ContinuousClock.now + .seconds(30)
        while records.withLock({ $0.count < channels.count || $0.values.contains { $0.lastAcknowledged < 30 } }) {
            try #require(ContinuousClock.now < loadDeadline, "the providers never got going: \(records.withLock { $0 })")
            try await Task.sleep(for: .milliseconds(20))
        }

        let signalled = ContinuousClock.now
        first.process.signal(SIGTERM)
        let status = await withCheckedContinuation { (done: CheckedContinuation<Int32, Never>) in
            Thread {
                done.resume(returning: first.process.wait().status)
            }.start()
        }
        let stopTime = ContinuousClock.now - signalled
        #expect(status == 0)
        #expect(first.process.wait() == .exited(0), "it exited by itself, not by a signal")
        #expect(stopTime < .seconds(10), "a container runtime would have killed it")
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in finished.notify(queue: .global()) { done.resume() } }

        try await eventually("the whole log read") { first.logEnded }
        let log = first.logLines
        for line in log {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "not a JSON object: \(line)")
        }
        #expect(log.contains { $0.contains(#""message":"SIGTERM received, shutting down""#) }, "\(log)")
        #expect(log.last?.contains(#""message":"stopped after "#) == true, "\(log.suffix(3))")

        let seen = records.withLock { $0 }
        let second = try await ServeProcess(dataDirectory: directory)
        for channel in channels {
            let record = try #require(seen[channel])
            #expect(!record.ending.isEmpty, "\(channel): posting ended once the gateway stopped")
            let shown = try second.admin.request("GET", "/v1/channels/\(channel)")
            try #require(shown.status == 200, "\(shown.text)")
            let lastSeq = try #require(shown.json?.integer("lastSeq"))
            // The last event tried may have been stored without its 202 reaching the provider.
            #expect((Int64(record.lastAcknowledged)...Int64(record.lastAttempted)).contains(lastSeq),
                    "\(channel): acknowledged \(record.lastAcknowledged), tried \(record.lastAttempted), stored \(lastSeq) (\(record.ending))")
            #expect(shown.json?[member: "contentState"] == ["minute": .integer(lastSeq)])
        }
        #expect(second.terminate() == 0)
    }

    /// APNs that stops answering does not hold the shutdown up: pushes in flight get the grace
    /// period, then are kept as pending and go out after the next start.
    /// A data directory holding channel `quiet`, created at a mock whose channels are kept in
    /// `channelsFile`, so a later mock (silent, then answering again) knows the channel.
    struct QuietChannel {
        let shared: String
        var data: String { shared + "/data" }
        var channelsFile: String { shared + "/channels.json" }
        let apnsID: String

        static func created() async throws -> QuietChannel {
            let shared = try MockAPNsDevelopmentCertificates.temporaryDirectory()
            let answering = try MockAPNsFixture { $0.channelsFile = shared + "/channels.json" }
            let first = try GatewayFixture(apns: answering.gatewaySettings, directory: shared + "/data")
            let created = try first.admin.request("POST", "/v1/channels", json: #"{"id": "quiet", "storagePolicy": "no-storage"}"#)
            let apnsID = try #require(created.json?.string("apnsChannelId"))
            await first.shutDown(removingData: false)
            await answering.shutDown()
            return QuietChannel(shared: shared, apnsID: apnsID)
        }
    }

    @Test func aSilentAPNsDelaysShutdownOnlyByTheGracePeriod() async throws {
        let quiet = try await QuietChannel.created()
        defer { try? FileManager.default.removeItem(atPath: quiet.shared) }
        let (data, channelsFile, apnsID) = (quiet.data, quiet.channelsFile, quiet.apnsID)

        let silent = try MockAPNsFixture {
            $0.channelsFile = channelsFile
            $0.faults.latency = .seconds(60)
        }
        let second = try GatewayFixture(apns: silent.gatewaySettings, directory: data)
        #expect(try second.admin.request("POST", "/v1/channels/quiet/events", json: #"{"seq": 1, "patch": {"minute": 61}}"#).status == 202)
        try await Task.sleep(for: .milliseconds(300))  // the broadcast is on its way to the silent APNs
        let started = ContinuousClock.now
        await second.gateway.shutdown(requestGracePeriod: .milliseconds(200), apnsGracePeriod: .milliseconds(500))
        // APNs would answer after 60 s; the graces are 0.7 s. The bound leaves room for the stores'
        // last fsyncs on a loaded machine (5.3 s once, with the cluster suites beside it) while
        // still failing a shutdown that waits for APNs.
        #expect(ContinuousClock.now - started < .seconds(20), "bounded by the grace periods, not by APNs")
        await silent.shutDown()

        let again = try MockAPNsFixture { $0.channelsFile = channelsFile }
        let third = try GatewayFixture(apns: again.gatewaySettings, directory: data)
        try await eventually("the broadcast kept over the restart") {
            again.mock.recordedRequests().contains { $0.endpoint == .broadcast && $0.channelID == apnsID && $0.bodyText.contains(#""minute":61"#) }
        }
        await third.shutDown(removingData: false)
        await again.shutDown()
    }
}
