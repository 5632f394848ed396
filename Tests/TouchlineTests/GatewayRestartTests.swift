import Foundation
import MockAPNs
import Testing
import Touchline
import TouchlineCore
import TouchlineStore

/// A gateway stopped and started again on the same data directory resumes its channels from
/// the store, against an APNs (the mock) that outlives it.
@Suite("Gateway restart")
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
        await apnsFixture.shutDown()
    }
}

@Suite("Gateway lost creates")
struct GatewayLostCreateTests {
    /// The process stopped after asking APNs for a channel but before saving its id: at the next
    /// start the gateway finds the unaccounted channel in APNs' list and adopts it.
    @Test func aCreateWhoseAnswerWasLostIsAdoptedFromTheList() async throws {
        let apns = try MockAPNsFixture()
        let data = apns.directory + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let store = try StoreWriter(path: data + "/touchline.sqlite")
        _ = try await store.createChannel(ChannelRecord(id: "lost", storagePolicy: .mostRecent, status: .creating,
                                                        createdAt: SystemClock().now()))
        store.close()
        let orphan = try #require(apns.mock.createChannel(storagePolicy: ChannelStorage.mostRecent.messageStoragePolicy))

        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: data)
        try await eventually("the adoption") {
            (try? gateway.admin.request("GET", "/v1/channels/lost").json?.string("apnsChannelId")) == orphan
        }
        let again = try gateway.admin.request("POST", "/v1/channels", json: #"{"id": "lost", "storagePolicy": "most-recent"}"#)
        #expect(again.status == 200)
        #expect(again.json?.string("apnsChannelId") == orphan)
        #expect(again.json?.string("status") == "active")
        #expect(apns.mock.counters().count(endpoint: .createChannel) == 0)
        await gateway.shutDown()
        await apns.shutDown()
    }
}
