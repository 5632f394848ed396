import ChildProcesses
import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineStore
import TouchlineTesting

/// A commit that fails changes nothing: the batch is answered 503 with `Retry-After`, the
/// channel keeps the state of its last commit, the gateway shows the failing store and recovers
/// by itself, the provider's retry is stored, and every 202 survives a restart. Requests behind a
/// failed write are checked in process on the in-memory stores, failed with their switch.
@Suite("Gateway store failures", .gatewaysInProcess)
struct GatewayStoreFailureTests {
    static func batch(_ seqs: ClosedRange<Int>) -> String {
        #"{"events": ["# + seqs.map { #"{"seq": \#($0), "patch": {"n": \#($0)}}"# }.joined(separator: ",") + "]}"
    }

    /// With the fault hook (any user): a failed commit leaves the channel as it was, the retry is
    /// stored as new events, not as duplicates, and nothing of the failed batch reaches APNs first.
    @Test(.heavy) func aFailedCommitChangesNothingAndTheRetryIsStored() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fault = directory + "/disk-full"
        let fixture = try GatewayFixture(directory: directory + "/data", storeFaultFile: fault)
        let api = fixture.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "f1", "storagePolicy": "no-storage", "policy": {"minimumIntervalSeconds": 0.001, "burst": 1000}}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        #expect(try api.request("POST", "/v1/channels/f1/events", json: Self.batch(1...5)).status == 202)
        try await eventually("the first broadcast") {
            fixture.mock.recordedRequests().contains { $0.channelID == apnsID && $0.bodyText.contains(#""n":5"#) }
        }

        #expect(FileManager.default.createFile(atPath: fault, contents: Data()))
        let failed = try api.request("POST", "/v1/channels/f1/events", json: Self.batch(6...9))
        #expect(failed.status == 503 && failed.errorCode == "store_unavailable", "\(failed.text)")
        #expect(failed.header("Retry-After") == "1")
        let shown = try api.request("GET", "/v1/channels/f1").json
        #expect(shown?.integer("lastSeq") == 5 && shown?[member: "contentState"] == ["n": 5], "the failed batch reached memory")
        // While failing, further input is refused at once, and operators see why.
        let refused = try api.request("POST", "/v1/channels/f1/events", json: Self.batch(6...6))
        #expect(refused.status == 503 && refused.header("Retry-After") == "1")
        let notReady = try api.request("GET", "/readyz", key: .some(nil))
        #expect(notReady.status == 503 && notReady.json?[member: "store"]?[member: "writable"] == false, "\(notReady.text)")
        #expect(try api.request("GET", "/metrics", key: .some(nil)).text.contains(#"touchline_store_writable{store="channels"} 0"#))
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "f2", "storagePolicy": "no-storage"}"#).status == 503)

        // Nothing of the failed batch reached APNs (it was never on disk).
        try await Task.sleep(for: .milliseconds(300))
        let failedStates = (6...9).map { #""n":\#($0)"# }
        #expect(!fixture.mock.recordedRequests().contains { request in failedStates.contains { request.bodyText.contains($0) } })

        try FileManager.default.removeItem(atPath: fault)
        try await eventually("the store to recover", timeout: .seconds(5)) {
            (try? api.request("GET", "/readyz", key: .some(nil)).status) == 200
        }
        let retried = try api.request("POST", "/v1/channels/f1/events", json: Self.batch(6...9))
        #expect(retried.status == 202 && retried.json?.integer("accepted") == 4 && retried.json?.integer("duplicates") == 0, "\(retried.text)")
        try await eventually("the retried state at APNs") {
            fixture.mock.recordedRequests().contains { $0.channelID == apnsID && $0.bodyText.contains(#""n":9"#) }
        }

        await fixture.shutDown(removingData: false)
        let restarted = try GatewayFixture(directory: directory + "/data")
        defer { Task { await restarted.shutDown() } }
        let afterRestart = try restarted.admin.request("GET", "/v1/channels/f1").json
        #expect(afterRestart?.integer("lastSeq") == 9 && afterRestart?[member: "contentState"] == ["n": 9])
    }

    /// Requests for a channel that wait behind its write in the store are answered in order; when
    /// that write fails they are refused too (the store is failing), and none of them is applied.
    @Test func requestsWaitingBehindAFailedWriteAreNotApplied() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "w1", "storagePolicy": "no-storage"}"#).status == 201)
        try #require(fixture.inMemory).channels.failStorage()
        let answers = try await withThrowingTaskGroup(of: GatewayTestClient.Response.self) { group in
            for seq in 1...8 { group.addTask { try api.request("POST", "/v1/channels/w1/events", json: Self.batch(seq...seq)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.status == 503 && $0.header("Retry-After") == "1" }, "\(answers.map(\.status))")
        #expect(try api.request("GET", "/v1/channels/w1").json?.integer("lastSeq") == 0)
    }

    /// A real full filesystem (a 3 MiB tmpfs, mounted when the tests run as root; skipped
    /// otherwise, where the fault hook above covers the logic): events are posted until the disk
    /// refuses them, the disk is freed, every refused batch is retried, and after a restart
    /// every acknowledged event is in the store.
    @Test(.heavy, .enabled(if: ScratchFilesystem.canMount, "needs root to mount a tmpfs"))
    func everyAcknowledgedEventSurvivesAFullDisk() async throws {
        let filesystem = try #require(ScratchFilesystem(bytes: 3 << 20))
        defer { filesystem.unmount() }
        let data = filesystem.path + "/data"
        var fixture: GatewayFixture? = try GatewayFixture(directory: data)
        let api = fixture!.admin
        for id in ["d1", "d2"] {
            #expect(try api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#).status == 201)
        }
        var acknowledged: [String: Int] = ["d1": 0, "d2": 0]
        var refused: (channel: String, seqs: ClosedRange<Int>)?
        for channel in ["d1", "d2"] {
            #expect(try api.request("POST", "/v1/channels/\(channel)/events", json: Self.batch(1...50)).status == 202)
            acknowledged[channel] = 50
        }
        let filler = filesystem.fill()
        // Batches of 50 events of about 60 bytes each, until the disk refuses one.
        for round in 0..<400 where refused == nil {
            let channel = round.isMultiple(of: 2) ? "d1" : "d2"
            let seqs = (acknowledged[channel]! + 1)...(acknowledged[channel]! + 50)
            let answer = try api.request("POST", "/v1/channels/\(channel)/events", json: Self.batch(seqs))
            switch answer.status {
            case 202: acknowledged[channel] = seqs.upperBound
            case 503:
                #expect(answer.errorCode == "store_unavailable" && answer.header("Retry-After") == "1", "\(answer.text)")
                refused = (channel, seqs)
            default: Issue.record("unexpected \(answer.status) \(answer.text)")
            }
            // The log may reuse room it already has for a while; keep the rest of the disk full.
            if round.isMultiple(of: 20) { filesystem.fill() }
        }
        let failed = try #require(refused, "the disk never refused a batch")
        #expect(try api.request("GET", "/readyz", key: .some(nil)).status == 503)
        #expect(try api.request("GET", "/v1/channels/\(failed.channel)").json?.integer("lastSeq") == Int64(acknowledged[failed.channel]!))

        try FileManager.default.removeItem(atPath: filler)
        try await eventually("the store to recover", timeout: .seconds(10)) {
            (try? api.request("GET", "/readyz", key: .some(nil)).status) == 200
        }
        let retried = try api.request("POST", "/v1/channels/\(failed.channel)/events", json: Self.batch(failed.seqs))
        #expect(retried.status == 202 && retried.json?.integer("accepted") == 50, "\(retried.text)")
        acknowledged[failed.channel] = failed.seqs.upperBound
        await fixture!.shutDown(removingData: false)
        fixture = nil

        let restarted = try GatewayFixture(directory: data)
        for (channel, last) in acknowledged {
            let shown = try restarted.admin.request("GET", "/v1/channels/\(channel)").json
            #expect(shown?.integer("lastSeq") == Int64(last), "\(channel)")
            #expect(shown?[member: "contentState"] == ["n": .integer(Int64(last))], "\(channel)")
        }
        await restarted.shutDown(removingData: false)
    }
}

/// A small tmpfs of its own, to fill for real; only root can mount one.
final class ScratchFilesystem: Sendable {
    let path: String

    static let canMount: Bool = {
        guard getuid() == 0, let probe = ScratchFilesystem(bytes: 1 << 20) else { return false }
        probe.unmount()
        return true
    }()

    init?(bytes: Int) {
        path = NSTemporaryDirectory() + "touchline-tmpfs-" + UUID().uuidString
        guard (try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)) != nil,
              Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", path]) else { return nil }
    }

    /// Appends to a filler file until the filesystem is full; returns the filler's path.
    @discardableResult
    func fill() -> String {
        let filler = path + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0x5A, count: 4096)
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        // What is left is smaller than a page: take it too.
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, 1) }) > 0 {}
        return filler
    }

    func unmount() {
        _ = Self.run("/bin/umount", ["-l", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    private static func run(_ tool: String, _ arguments: [String]) -> Bool {
        (try? ChildProcess.run(tool, arguments, errors: .null))?.termination == .exited(0)
    }
}
