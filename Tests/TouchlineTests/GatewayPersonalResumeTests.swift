import ChildProcesses
import APNsMock
import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineStore

/// `touchline serve` killed with SIGKILL in the middle of a fan-out: the next start resumes the
/// job from its saved progress, every target ends exactly once in the counts, and APNs sees a
/// token twice only if its request was in flight (or its answer not yet saved) at the kill.
@Suite("Gateway personal jobs resume after a crash", .heavy)
struct GatewayPersonalResumeTests {
    static let audience = 400
    static let maxInFlight = 4

    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func fanOutKilledMidwayResumesWithoutResendingWhatWasAccepted() async throws {
        // Each answer 40 ms after its push, so the kill comes in the middle of the fan-out.
        let apns = try MockAPNsFixture { $0.faults.latency = .milliseconds(40) }
        defer { Task { await apns.shutDown() } }
        let arguments = apns.serveArguments + [
            "--max-body-bytes", "1048576", "--personal-queue", #"{"maxInFlight": \#(Self.maxInFlight), "saveIntervalMilliseconds": 1}"#,
        ]
        let data = apns.directory + "/data"
        let first = try await ServeProcess(dataDirectory: data, arguments: arguments)
        let tokens = (0..<Self.audience).map(GatewayPersonalAPITests.token)
        let registrations = tokens.map { #"{"token": "\#($0)", "kind": "push-to-start", "follows": ["team:ARS"]}"# }.joined(separator: ",")
        let registered = try first.admin.request("POST", "/v1/tokens/batch", json: #"{"tokens": [\#(registrations)]}"#)
        #expect(registered.status == 201, "\(registered.text)")
        // The kill comes from a thread of its own watching the mock: a polling task could be
        // starved by the cooperative pool on a busy machine and miss the middle of the fan-out.
        let mock = apns.mock, pid = first.process.pid
        let killed = DispatchSemaphore(value: 0)
        Thread {
            let deadline = ContinuousClock.now + .seconds(30)
            while mock.counters().count(endpoint: .device, status: 200) < Self.audience / 6, ContinuousClock.now < deadline {
                usleep(1_000)
            }
            kill(pid, SIGKILL)
            killed.signal()
        }.start()
        let created = try first.admin.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { killed.wait(); done.resume() }
        }
        first.process.wait()
        let acceptedBeforeKill = apns.mock.recordedRequests().count { $0.endpoint == .device && $0.status == 200 }
        #expect(acceptedBeforeKill < Self.audience, "the kill came in the middle of the fan-out")
        // What the killed process had saved as sent: every acceptance beyond it was in flight or
        // not yet saved at the kill, and is all that may go twice.
        let saved = try SQLiteTokenReader(path: data + "/personal.sqlite")
        let savedSent = try #require(try saved.jobSummary(id: jobID)).counts.sent
        saved.close()

        let second = try await ServeProcess(dataDirectory: data, arguments: arguments)
        var progress: JSONValue?
        try await eventually("the resumed job to finish", timeout: .seconds(30)) {
            progress = try? second.admin.request("GET", "/v1/personal/\(jobID)").json
            return progress?.string("status") == "done"
        }
        #expect(second.terminate() == 0)
        #expect(progress?.integer("targeted") == Int64(Self.audience))
        #expect(progress?.integer("sent") == Int64(Self.audience))
        #expect(progress?.integer("pending") == 0)

        let accepted = apns.mock.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 }.compactMap(\.deviceToken)
        var seen: [String: Int] = [:]
        for token in accepted { seen[token, default: 0] += 1 }
        #expect(Set(seen.keys) == Set(tokens))
        let sentTwice = seen.values.count { $0 > 1 }
        #expect(sentTwice <= acceptedBeforeKill - Int(savedSent),
                "\(sentTwice) tokens were accepted twice; \(acceptedBeforeKill) accepted before the kill, \(savedSent) saved as sent")
        #expect(seen.values.allSatisfy { $0 <= 2 })
    }
}
