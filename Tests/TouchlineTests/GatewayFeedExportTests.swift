import APNsMock
import Foundation
import Synchronization
import Testing
import TestSlots
@testable import Touchline
import TouchlineCore
import TouchlineStore
import TouchlineTesting

/// A channel created with `recordFeed` keeps its accepted events (with their receive times)
/// across writes and restarts, and `GET /v1/channels/{id}/events/export` writes them as a feed
/// that `touchline replay` reads back; other channels keep nothing and say so.
@Suite("Feed recording and export", .heavy)
struct GatewayFeedExportTests {
    @Test func aRecordingChannelExportsEveryAcceptedEventAcrossARestartAndTheReplayReadsIt() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let first = try GatewayFixture(directory: directory)
        var api = first.admin
        let body = #"{"id": "club-rec", "storagePolicy": "no-storage", "recordFeed": true, "attributes": \#(GatewayFixture.matchAttributes)}"#
        let created = try api.request("POST", "/v1/channels", json: body)
        #expect(created.status == 201 && created.json?[member: "recordFeed"] == .bool(true), "\(created.text)")
        #expect(try api.request("POST", "/v1/channels/club-rec/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        let batch = #"{"events": [{"seq": 2, "type": "clock", "clockSeconds": 60}, {"seq": 3, "type": "goal", "team": "home", "player": "Saka", "minute": 2}]}"#
        #expect(try api.request("POST", "/v1/channels/club-rec/events", json: batch).status == 202)
        #expect(try api.request("POST", "/v1/channels/club-rec/events", json: #"{"seq": 3, "type": "goal", "team": "home", "minute": 2}"#).status == 202,
                "a duplicate is acknowledged, not recorded")

        // Asked differently, the create is a conflict naming the member; a wrong type names it too.
        let differing = try api.request("POST", "/v1/channels", json: body.replacingOccurrences(of: #""recordFeed": true"#, with: #""recordFeed": false"#))
        #expect(differing.status == 409 && differing.text.contains("recordFeed"), "\(differing.text)")
        let wrongType = try api.request("POST", "/v1/channels", json: #"{"id": "club-x", "storagePolicy": "no-storage", "recordFeed": "yes"}"#)
        #expect(wrongType.status == 400 && wrongType.text.contains("'recordFeed' must be true or false"), "\(wrongType.text)")
        // A channel that does not record has nothing to export.
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-plain", "storagePolicy": "no-storage"}"#).status == 201)
        let plain = try api.request("GET", "/v1/channels/club-plain/events/export")
        #expect(plain.status == 409 && plain.errorCode == "not_recording", "\(plain.text)")

        // The recording survives a restart (the log is never cut), and goes on after it.
        await first.shutDown(removingData: false)
        let fixture = try GatewayFixture(directory: directory)
        defer { Task { await fixture.shutDown() } }
        api = fixture.admin
        #expect(try api.request("GET", "/v1/channels/club-rec").json?[member: "recording"]?[member: "events"] == .integer(3))
        #expect(try api.request("POST", "/v1/channels/club-rec/events", json: #"{"seq": 4, "type": "stats", "homeShots": 4}"#).status == 202)
        #expect(try api.request("POST", "/v1/channels/club-rec/end", json: #"{"finalState": null}"#).status == 202)

        let export = try api.request("GET", "/v1/channels/club-rec/events/export")
        #expect(export.status == 200 && export.header("Content-Type") == "application/x-ndjson", "\(export.text)")
        let feed = try RecordedFeed(jsonLines: export.body)
        #expect(feed.header.channelID == "club-rec" && feed.header.channel.attributes?.homeCode == "ARS" && feed.header.channel.storage == .noStorage)
        let seqs = feed.entries.compactMap { entry -> Int64? in
            if case .event(let event) = entry.input, case .integer(let seq)? = event[member: "seq"] { seq } else { nil }
        }
        #expect(seqs == [1, 2, 3, 4])
        #expect(zip(feed.entries, feed.entries.dropFirst()).allSatisfy { $0.receivedAt <= $1.receivedAt })
        guard case .end(let finalState, _)? = feed.entries.last?.input else {
            Issue.record("the export ends with the channel's end: \(export.text)")
            return
        }
        #expect(finalState?[member: "homeScore"] == .integer(1), "\(String(describing: finalState))")

        // The export replays: the goal goes at priority 10, the end is delivered.
        let replayed = try FeedReplay.run(feed, settings: .init(policy: feed.header.channel.policy))
        #expect(replayed.events.count == 4 && replayed.endDeliveredAt != nil)
        #expect(replayed.events.first { $0.importance == .critical && $0.priority == .immediate } != nil)
    }

    /// An export whose store cannot be read is a 503 naming the problem, with `Retry-After`;
    /// nothing is half written, and the next export, once the store reads again, is whole.
    @Test func anExportWhoseStoreCannotBeReadIsA503NamingTheProblem() async throws {
        let channels = InMemoryStore(name: "channels"), personal = InMemoryStore(name: "personal")
        let unreadable = Mutex(false)
        let backends = Gateway.Backends(stores: { _ in
            var stores = Gateway.Stores.inMemory(channels: channels, personal: personal)
            let open = stores.channelReader
            stores.channelReader = {
                if unreadable.withLock({ $0 }) { throw StoreError.storageFailure("disk I/O error (simulated)") }
                return try open()
            }
            return stores
        }, apns: Gateway.Backends.standard.apns)
        let fixture = try GatewayFixture(backends: backends)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-io", "storagePolicy": "no-storage", "recordFeed": true}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/club-io/events", json: #"{"seq": 1, "patch": {"minute": 1}}"#).status == 202)
        unreadable.withLock { $0 = true }
        let failed = try api.request("GET", "/v1/channels/club-io/events/export")
        #expect(failed.status == 503 && failed.errorCode == "store_unavailable" && failed.header("Retry-After") == "1", "\(failed.text)")
        #expect(failed.text.contains("disk I/O error (simulated)"), "\(failed.text)")
        unreadable.withLock { $0 = false }
        let export = try api.request("GET", "/v1/channels/club-io/events/export")
        let entries = try RecordedFeed(jsonLines: export.body).entries
        #expect(export.status == 200 && entries.count == 1, "\(export.text)")
    }
}
