import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineAccess
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// What the disk failing in the middle of a channel's life must not leave behind: an APNs
/// channel nobody accounts for, or a channel that comes back from a restart as it was before
/// the failure (both found by the soak scenario).
@Suite("Gateway store failure recovery", .heavy)
struct GatewayStoreFailureRecoveryTests {
    /// APNs created the channel, but saving its id failed: the provider's repeat saves that id
    /// instead of asking APNs for a second channel.
    @Test func aCreateWhoseIDCouldNotBeSavedIsNotCreatedTwice() async throws {
        // The mock makes the channel when the create arrives and answers 5 s later: the disk
        // fails in between, whatever the machine's load.
        let apns = try MockAPNsFixture { $0.faults.latency = .seconds(5) }
        let fault = apns.directory + "/disk-full"
        let fixture = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data", storeFaultFile: fault)
        defer { Task { await fixture.shutDown(); await apns.shutDown() } }
        let api = fixture.admin
        let body = #"{"id": "c1", "storagePolicy": "no-storage"}"#
        // The disk fails from a thread of its own watching the mock: a polling task could be
        // starved by the task pool on a busy machine for longer than the answer's delay.
        let mock = apns.mock
        Thread {
            let deadline = ContinuousClock.now + .seconds(30)
            while mock.channels().isEmpty, ContinuousClock.now < deadline { usleep(1_000) }
            // Not an `#expect`: this thread runs outside the test; the `removeItem` below fails if the file is missing.
            _ = FileManager.default.createFile(atPath: fault, contents: Data())
        }.start()
        let refused = try await Task.detached { try api.request("POST", "/v1/channels", json: body) }.value
        #expect(refused.status == 503 && refused.errorCode == "store_unavailable", "\(refused.text)")
        #expect(apns.mock.channels().count == 1, "APNs holds the channel whose id was not saved")
        try FileManager.default.removeItem(atPath: fault)
        try await eventually("the store to recover", timeout: .seconds(5)) {
            (try? api.request("GET", "/readyz", key: .some(nil)).status) == 200
        }
        let repeated = try api.request("POST", "/v1/channels", json: body)
        #expect(repeated.status == 201, "\(repeated.text)")
        let apnsIDs = Set(apns.mock.channels().keys)
        #expect(apnsIDs.count == 1 && repeated.json?.string("apnsChannelId").map(apnsIDs.contains) == true,
                "a second APNs channel was created: \(apnsIDs)")
    }

    /// A channel ended and deleted while the disk was full is saved again once the disk
    /// recovers, so a restart finds it deleted (not back in its last committed state).
    @Test func savesThatFailedOnAFullDiskAreMadeAgain() async throws {
        let apns = try MockAPNsFixture()
        let fault = apns.directory + "/disk-full"
        let data = apns.directory + "/data"
        let first = try GatewayFixture(apns: apns.gatewaySettings, directory: data, storeFaultFile: fault)
        let api = first.admin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "e1", "storagePolicy": "no-storage", "policy": {"endGracePeriodSeconds": 1}}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        #expect(try api.request("POST", "/v1/channels/e1/end").status == 202)
        #expect(FileManager.default.createFile(atPath: fault, contents: Data()))
        try await eventually("the channel deleted at APNs", timeout: .seconds(10)) { apns.mock.channels()[apnsID] == nil }
        try await eventually("the channel shown deleted") { (try? api.request("GET", "/v1/channels/e1").json?.string("status")) == "deleted" }
        try FileManager.default.removeItem(atPath: fault)
        try await eventually("the store to recover", timeout: .seconds(5)) {
            (try? api.request("GET", "/readyz", key: .some(nil)).status) == 200
        }
        // The failed saves are made again about a second later: the file shows the channel deleted.
        try await eventually("the deletion saved again") {
            guard let reader = try? SQLiteChannelReader(path: data + "/touchline.sqlite") else { return false }
            defer { reader.close() }
            return (try? reader.channel(id: "e1"))??.status == .deleted
        }
        await first.shutDown(removingData: false)

        let second = try GatewayFixture(apns: apns.gatewaySettings, directory: data)
        defer { Task { await second.shutDown(); await apns.shutDown() } }
        #expect(try second.admin.request("GET", "/v1/channels/e1").json?.string("status") == "deleted")
        try await Task.sleep(for: .milliseconds(300))
        #expect(!apns.mock.recordedRequests().contains { $0.endpoint == .broadcast && $0.status == 400 },
                "the restarted gateway sent to the deleted channel")
    }
}

/// How a failed read of a store is answered (``HTTPError/readFailed(_:reading:)``).
struct StoreReadAnswerTests {
    /// A read failed in the storage (a partition of a cluster's registry being taken over, a
    /// failing store) is answered 503 with `Retry-After`, as a failed write is, so a client
    /// retries; one the store refused itself is a 500. (A token list that found its partition
    /// moving was answered 500 before.)
    @Test func aReadFailedInTheStorageIsAnswered503AndOneRefused500() {
        let moving = HTTPError.readFailed(.storageFailure("no gateway serves registry partition 56 now (it is being taken over); retry"),
                                          reading: "tokens")
        #expect(moving.status == 503 && moving.code == "store_unavailable")
        #expect(moving.headers.contains { $0.name == "Retry-After" && $0.value == "1" })
        #expect(moving.message.contains("reading tokens failed") && moving.message.contains("partition 56"))
        let refused = HTTPError.readFailed(.refused("a record this build cannot read"), reading: "the job")
        #expect(refused.status == 500 && refused.code == "store_failed" && refused.headers.isEmpty)
    }
}
