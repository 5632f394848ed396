import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineStore

/// A gateway stopped and started again on the same data directory resumes its channels from
/// the store, against an APNs (the mock) that outlives it.
@Suite("Gateway restart", .heavy)
struct GatewayRestartTests {
    @Test func restartResumesChannelsWithoutCreatingThemAgain() async throws {
        let apnsFixture = try MockAPNsFixture()
        let mock = apnsFixture.mock
        let data = apnsFixture.directory + "/data"
        let apns = apnsFixture.gatewaySettings

        let first = try GatewayFixture(apns: apns, directory: data)
        #expect(first.gateway.bundledMockAPNs == nil)
        let created = try first.admin.request("POST", "/v1/channels", json: #"{"id": "r1", "storagePolicy": "no-storage"}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        #expect(try first.admin.request("POST", "/v1/channels/r1/events", json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)
        try await eventually("the first broadcast") {
            mock.recordedRequests().contains { $0.endpoint == .broadcast && $0.channelID == apnsID }
        }
        await first.shutDown(removingData: false)

        let second = try GatewayFixture(apns: apns, directory: data)
        let shown = try second.admin.request("GET", "/v1/channels/r1")
        #expect(shown.status == 200)
        #expect(shown.json?.string("apnsChannelId") == apnsID)
        #expect(shown.json?.integer("lastSeq") == 1)
        #expect(shown.json?[member: "contentState"] == ["home": 1])
        let duplicate = try second.admin.request("POST", "/v1/channels/r1/events", json: #"{"seq": 1, "patch": {"home": 7}}"#)
        #expect(duplicate.json?.integer("duplicates") == 1)
        #expect(try second.admin.request("POST", "/v1/channels/r1/events", json: #"{"seq": 2, "patch": {"home": 2}}"#).status == 202)
        try await eventually("the broadcast after the restart") {
            mock.recordedRequests().contains { $0.endpoint == .broadcast && $0.channelID == apnsID && $0.bodyText.contains(#""home":2"#) }
        }
        let recreate = try second.admin.request("POST", "/v1/channels", json: #"{"id": "r1", "storagePolicy": "no-storage"}"#)
        #expect(recreate.status == 200)
        #expect(mock.counters().count(endpoint: .createChannel) == 1)
        await second.shutDown(removingData: false)
        // The log keeps only the events the saved state does not cover yet (the last batch).
        let reader = try SQLiteChannelReader(path: data + "/touchline.sqlite")
        #expect(try reader.events(channelID: "r1", afterSeq: 0, limit: 10).map(\.seq) == [2])
        reader.close()
        await apnsFixture.shutDown()
    }
}

extension GatewayRestartTests {
    /// Without Apple credentials both the gateway and its bundled mock restart; the mock keeps its
    /// channels in the data directory, so the channel is still registered and pushes go on.
    @Test func restartWithTheBundledMockKeepsChannelsRegistered() async throws {
        let first = try GatewayFixture()
        let data = first.directory
        let created = try first.admin.request("POST", "/v1/channels", json: #"{"id": "b1", "storagePolicy": "no-storage"}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"))
        await first.shutDown(removingData: false)

        let second = try GatewayFixture(directory: data)
        defer { Task { await second.shutDown() } }
        #expect(second.mock.channels()[apnsID] == 0, "the restarted mock lost the channel")
        #expect(try second.admin.request("POST", "/v1/channels/b1/events", json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)
        try await eventually("a broadcast accepted after the restart") {
            second.mock.recordedRequests().contains { $0.endpoint == .broadcast && $0.channelID == apnsID && $0.status == 200 }
        }
        #expect(try second.admin.request("GET", "/v1/channels/b1").json?.string("status") == "active")
    }
}

@Suite("Gateway lost creates", .heavy)
struct GatewayLostCreateTests {
    /// The process stopped after asking APNs for channels but before saving their ids: at the next
    /// start the gateway adopts an unaccounted channel with the right storage policy, creates
    /// again the intent nothing matches, and deletes the orphan nobody adopted.
    @Test func createsWhoseAnswerWasLostAreReconciledWithTheList() async throws {
        let apns = try MockAPNsFixture()
        let data = apns.directory + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let store = try StoreWriter(path: data + "/touchline.sqlite")
        for (id, storage) in [("lost", ChannelStorage.mostRecent), ("never-sent", .noStorage)] {
            _ = try await store.createChannel(ChannelRecord(id: id, storagePolicy: storage, status: .creating, createdAt: SystemClock().now()))
        }
        store.close()
        let orphans = try (0..<2).map { _ in try #require(apns.mock.createChannel(storagePolicy: ChannelStorage.mostRecent.messageStoragePolicy)) }

        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: data)
        try await eventually("the reconciliation") {
            apns.mock.counters().count(endpoint: .deleteChannel) == 1 && apns.mock.counters().count(endpoint: .createChannel) == 1
                && (try? gateway.admin.request("GET", "/v1/channels/never-sent").json?.string("status")) == "active"
        }
        let lost = try gateway.admin.request("POST", "/v1/channels", json: #"{"id": "lost", "storagePolicy": "most-recent"}"#)
        #expect(lost.status == 200)
        let adopted = try #require(lost.json?.string("apnsChannelId"))
        #expect(orphans.contains(adopted))
        #expect(lost.json?.string("status") == "active")
        let remaining = apns.mock.channels()
        #expect(remaining[adopted] != nil)
        #expect(orphans.filter { remaining[$0] != nil } == [adopted])
        await gateway.shutDown()
        await apns.shutDown()
    }

    /// A shadow channel whose create intent was saved before the process stopped is created
    /// again by the gateway itself: it never adopts an APNs orphan, and APNs is not asked.
    @Test func aShadowChannelsLostCreateIsRedoneWithoutAPNs() async throws {
        let apns = try MockAPNsFixture()
        let data = apns.directory + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let store = try StoreWriter(path: data + "/touchline.sqlite")
        _ = try await store.createChannel(ChannelRecord(id: "trial", storagePolicy: .mostRecent, policyJSON: #"{"shadow": true}"#, status: .creating,
                                                        createdAt: SystemClock().now()))
        store.close()
        let orphan = try #require(apns.mock.createChannel(storagePolicy: ChannelStorage.mostRecent.messageStoragePolicy))

        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: data)
        try await eventually("the shadow channel created again") {
            (try? gateway.admin.request("GET", "/v1/channels/trial").json?.string("status")) == "active"
        }
        #expect(try gateway.admin.request("GET", "/v1/channels/trial").json?.string("apnsChannelId") == "shadow:trial")
        #expect(apns.mock.channels()[orphan] != nil, "the orphan is not the shadow channel's")
        #expect(apns.mock.counters().count(endpoint: .createChannel) == 0, "APNs was not asked for a channel")
        await gateway.shutDown()
        await apns.shutDown()
    }
}
