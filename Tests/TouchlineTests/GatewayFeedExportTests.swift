import APNsMock
import Foundation
import Synchronization
import Testing
import TestSlots
@testable import Touchline
@testable import TouchlineChannels
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
        let unreadable = Mutex(false)
        let fixture = try Self.gateway(whoseReaderFails: { unreadable.withLock { $0 } })
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

    /// A gateway on in-memory stores whose channel reader fails to open (a simulated disk I/O
    /// error) whenever `failsNow` says so.
    private static func gateway(whoseReaderFails failsNow: @escaping @Sendable () -> Bool) throws -> GatewayFixture {
        let channels = InMemoryStore(name: "channels"), personal = InMemoryStore(name: "personal")
        let backends = Gateway.Backends(stores: { _ in
            var stores = GatewayStores.inMemory(channels: channels, personal: personal)
            let open = stores.channelReader
            stores.channelReader = {
                if failsNow() { throw StoreError.storageFailure("disk I/O error (simulated)") }
                return try open()
            }
            return stores
        }, apns: Gateway.Backends.standard.apns)
        return try GatewayFixture(backends: backends)
    }

    /// A store that fails once the answer has begun cuts the transfer: the connection closes
    /// without the last chunk, so the client sees an incomplete body, never a shorter feed that
    /// looks whole; the failure is counted.
    @Test func anExportThatFailsAfterItBeganIsCutNotEnded() async throws {
        // Armed, the store opens one more reader (the export's pages), then fails (the end's read).
        let opensLeft = Mutex<Int?>(nil)
        let fixture = try Self.gateway(whoseReaderFails: {
            opensLeft.withLock { left -> Bool in
                guard let remaining = left else { return false }
                left = remaining - 1
                return remaining <= 0
            }
        })
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-cut", "storagePolicy": "no-storage", "recordFeed": true}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/club-cut/events", json: Self.patches(from: 1, count: 10)).status == 202)
        opensLeft.withLock { $0 = 1 }
        let cut = try api.request("GET", "/v1/channels/club-cut/events/export")
        #expect(cut.status == 200 && cut.header("Transfer-Encoding") == "chunked" && !cut.isComplete, "\(cut.head)")
        #expect(cut.body.split(separator: UInt8(ascii: "\n")).count == 11, "the header and the events written before the failure")
        opensLeft.withLock { $0 = nil }
        try await eventually("the failure counted") {
            (try? api.request("GET", "/metrics")).flatMap { metricValue($0.text, #"touchline_exports_total{outcome="failed"}"#) } == 1
        }
        let whole = try api.request("GET", "/v1/channels/club-cut/events/export")
        let entries = try RecordedFeed(jsonLines: whole.body).entries
        #expect(whole.status == 200 && whole.isComplete && entries.count == 10)
    }

    /// `count` merge-patch events from `seq` on, as one request's body.
    static func patches(from seq: Int, count: Int) -> String {
        #"{"events": [\#((seq..<seq + count).map { #"{"seq": \#($0), "patch": {"minute": \#($0), "note": "n\#($0)"}}"# }.joined(separator: ","))]}"#
    }

    /// The export is streamed (chunked, one piece per page of the recording) and its bytes are the
    /// whole feed's, exactly as written at once: the header, every event in `seq` order, the end.
    @Test func anExportIsStreamedPageByPageAndIsTheWholeFeedByteForByte() async throws {
        let fixture = try GatewayFixture(maxBodyBytes: 1 << 20)
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-long", "storagePolicy": "no-storage", "recordFeed": true}"#).status == 201)
        let total = 2 * ChannelService.exportPageEvents + 500
        for seq in stride(from: 1, through: total, by: 1_000) {
            let posted = try api.request("POST", "/v1/channels/club-long/events", json: Self.patches(from: seq, count: min(1_000, total - seq + 1)))
            #expect(posted.status == 202, "\(posted.text)")
        }
        #expect(try api.request("POST", "/v1/channels/club-long/end", json: #"{"finalState": null}"#).status == 202)

        let export = try api.request("GET", "/v1/channels/club-long/events/export")
        #expect(export.status == 200 && export.header("Transfer-Encoding") == "chunked" && export.header("Content-Length") == nil,
                "\(export.head)")
        #expect(export.isComplete, "the last chunk came")
        let feed = try RecordedFeed(jsonLines: export.body)
        let seqs = feed.entries.compactMap { entry -> Int64? in
            if case .event(let event) = entry.input, case .integer(let seq)? = event[member: "seq"] { seq } else { nil }
        }
        #expect(seqs == Array(1...Int64(total)))
        guard case .end? = feed.entries.last?.input else { Issue.record("the export ends with the end"); return }
        // Byte for byte the feed written whole from the same entries (the format's one encoding).
        #expect(export.body == RecordedFeed(header: feed.header, entries: feed.entries).jsonLines)
        let lines = export.body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        #expect(lines.count == total + 3 && lines.last?.isEmpty == true, "a header, \(total) events, the end, each ending with a newline")
        let metrics = try api.request("GET", "/metrics").text
        #expect(metricValue(metrics, #"touchline_exports_total{outcome="complete"}"#) == 1)
        #expect(metricValue(metrics, "touchline_exported_events_total") == Double(total))
        #expect(metricValue(metrics, "touchline_exported_bytes_total") == Double(export.body.count))
        #expect(metricValue(metrics, "touchline_exports_running") == 0)
    }

    /// At most `maxExportsPerKey` exports of one key run at once (429 `too_many_exports` beyond)
    /// and `maxConcurrentExports` in the gateway (503 `exports_busy`), each with `Retry-After`;
    /// the held exports still finish whole, and their slots are free again afterwards.
    @Test func exportsRunOnABoundedPoolWithAPerKeyLimit() async throws {
        let channels = InMemoryStore(name: "channels"), personal = InMemoryStore(name: "personal")
        // While held, an export's read of the store waits: it holds its slot for as long as the test needs.
        let held = Mutex(false), waiting = Mutex(0)
        let release = DispatchSemaphore(value: 0)
        let backends = Gateway.Backends(stores: { _ in
            var stores = GatewayStores.inMemory(channels: channels, personal: personal)
            let open = stores.channelReader
            stores.channelReader = {
                if held.withLock({ $0 }) {
                    waiting.withLock { $0 += 1 }
                    release.wait()
                    release.signal()
                }
                return try open()
            }
            return stores
        }, apns: Gateway.Backends.standard.apns)
        let fixture = try GatewayFixture(backends: backends) { configuration in
            configuration.recordings.maxExportsPerKey = 2
            configuration.recordings.maxConcurrentExports = 2
        }
        defer { Task { await fixture.shutDown() } }
        let api = fixture.admin.waiting(upTo: 60)
        let club = GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey).waiting(upTo: 60)
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "club-io", "storagePolicy": "no-storage", "recordFeed": true}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/club-io/events", json: #"{"seq": 1, "patch": {"minute": 1}}"#).status == 202)

        held.withLock { $0 = true }
        let answers = Mutex<[GatewayTestClient.Response]>([])
        let done = DispatchGroup()
        for _ in 0..<2 {
            done.enter()
            Thread {
                if let response = try? club.request("GET", "/v1/channels/club-io/events/export") { answers.withLock { $0.append(response) } }
                done.leave()
            }.start()
        }
        try await eventually("both of the key's exports under way") { waiting.withLock { $0 } == 2 }
        let third = try club.request("GET", "/v1/channels/club-io/events/export")
        #expect(third.status == 429 && third.errorCode == "too_many_exports" && third.header("Retry-After") != nil, "\(third.text)")
        #expect(third.text.contains("recordings.maxExportsPerKey"), "\(third.text)")
        let other = try api.request("GET", "/v1/channels/club-io/events/export")
        #expect(other.status == 503 && other.errorCode == "exports_busy" && other.header("Retry-After") != nil, "\(other.text)")
        #expect(try api.request("GET", "/metrics").text.contains("touchline_exports_running 2"))

        held.withLock { $0 = false }
        release.signal()
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in done.notify(queue: .global()) { finished.resume() } }
        let exported = answers.withLock { $0 }
        #expect(exported.count == 2 && exported.allSatisfy { $0.status == 200 && $0.isComplete }, "\(exported.map(\.status))")
        #expect(exported.allSatisfy { (try? RecordedFeed(jsonLines: $0.body).entries.count) == 1 })
        try await eventually("the slots free again") { (try? club.request("GET", "/v1/channels/club-io/events/export").status) == 200 }
        let metrics = try api.request("GET", "/metrics").text
        #expect(metricValue(metrics, #"touchline_exports_refused_total{reason="too_many_exports"}"#) == 1)
        #expect(metricValue(metrics, #"touchline_exports_refused_total{reason="exports_busy"}"#) == 1)
    }

    /// Events of exactly 100 bytes as recorded (the event's compact JSON), seqs 10 to 99.
    static func hundredByteEvents(_ seqs: ClosedRange<Int>) -> String {
        #"{"events": [\#(seqs.map { #"{"seq": \#($0), "patch": {"n": "\#(String(repeating: "x", count: 73))"}}"# }.joined(separator: ","))]}"#
    }

    /// Recordings hold at most their quota of bytes per key (the key whose prefix covers the
    /// channel) and in all: a create of a recording is refused with a named 409 once its key's or
    /// the gateway's recordings are full, and a recording whose next events pass a quota stops
    /// before the first that does not fit (no gap: the feed up to there), for good, across a
    /// restart; the events are applied as usual. Deleting a recording frees its bytes.
    @Test func recordingsHaveADiskQuotaPerKeyAndPerGateway() async throws {
        let one = try JSONParser.parse(Array(Self.hundredByteEvents(10...10).utf8))[member: "events"]
        guard case .array(let events)? = one else { Issue.record("no events"); return }
        #expect(events.first?.encoded.count == 100)
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        let limits: (inout GatewayConfiguration) -> Void = { configuration in
            configuration.recordings.maxRecordedBytesPerKey = 1_000
            configuration.recordings.maxRecordedBytes = 1_500
        }
        let first = try GatewayFixture(directory: directory, configure: limits)
        var api = first.admin
        var club = GatewayTestClient(port: first.port, key: GatewayFixture.clubKey)
        func create(_ id: String, _ extra: String = #", "recordFeed": true"#, through client: GatewayTestClient) throws -> GatewayTestClient.Response {
            try client.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"\#(extra)}"#)
        }
        #expect(try create("club-r1", through: club).status == 201)
        // Twelve events of 100 bytes: the key's 1,000 bytes take ten; all twelve are applied.
        let posted = try club.request("POST", "/v1/channels/club-r1/events", json: Self.hundredByteEvents(10...21))
        #expect(posted.status == 202 && posted.json?.integer("accepted") == 12, "\(posted.text)")
        #expect(try club.request("POST", "/v1/channels/club-r1/events", json: Self.hundredByteEvents(22...22)).status == 202)
        var shown = try club.request("GET", "/v1/channels/club-r1").json
        #expect(shown?[member: "recording"] == ["events": 10, "limit": 100_000, "bytes": 1_000, "stopped": true], "\(String(describing: shown))")
        #expect(shown?.integer("lastSeq") == 22 && shown?[member: "contentState"]?.string("n") != nil)

        let overKey = try create("club-r2", through: club)
        #expect(overKey.status == 409 && overKey.errorCode == "recording_quota_exceeded", "\(overKey.text)")
        #expect(overKey.text.contains("'club-'") && overKey.text.contains("recordings.maxRecordedBytesPerKey"), "\(overKey.text)")
        let shadow = try create("club-s", #", "shadow": true"#, through: club)
        #expect(shadow.status == 409 && shadow.errorCode == "recording_quota_exceeded", "a shadow channel records by default: \(shadow.text)")
        #expect(try create("club-s", #", "shadow": true, "recordFeed": false"#, through: club).status == 201)
        #expect(try create("club-plain", "", through: club).status == 201)

        // The admin's own channels fill the gateway's 1,500 bytes: five of six events.
        #expect(try create("ops-r1", through: api).status == 201)
        #expect(try api.request("POST", "/v1/channels/ops-r1/events", json: Self.hundredByteEvents(10...15)).status == 202)
        #expect(try api.request("GET", "/v1/channels/ops-r1").json?[member: "recording"]?[member: "events"] == .integer(5))
        let overGateway = try create("ops-r2", through: api)
        #expect(overGateway.status == 409 && overGateway.errorCode == "gateway_recording_quota_exceeded", "\(overGateway.text)")
        let metrics = try api.request("GET", "/metrics").text
        #expect(metricValue(metrics, #"touchline_recorded_bytes{key="club-"}"#) == 1_000)
        #expect(metricValue(metrics, #"touchline_recording_quota_used_ratio{resource="bytes",quota="gateway"}"#) == 1)
        #expect(metricValue(metrics, #"touchline_recording_quota_used_ratio{resource="bytes",quota="key",key="club-"}"#) == 1)
        #expect(metricValue(metrics, "touchline_recordings_stopped_total") == 2)
        #expect(metricValue(metrics, #"touchline_recording_quota_refusals_total{reason="recording_quota_exceeded"}"#) == 2)

        // The export is the feed up to the stop, whole; the stop and the quotas outlive a restart.
        let export = try club.request("GET", "/v1/channels/club-r1/events/export")
        let seqs = try RecordedFeed(jsonLines: export.body).entries.compactMap { entry -> Int64? in
            if case .event(let event) = entry.input, case .integer(let seq)? = event[member: "seq"] { seq } else { nil }
        }
        #expect(export.status == 200 && export.isComplete && seqs == Array(10...19))
        await first.shutDown(removingData: false)
        let fixture = try GatewayFixture(directory: directory, configure: limits)
        defer { Task { await fixture.shutDown() } }
        (api, club) = (fixture.admin, GatewayTestClient(port: fixture.port, key: GatewayFixture.clubKey))
        #expect(try club.request("POST", "/v1/channels/club-r1/events", json: Self.hundredByteEvents(23...23)).status == 202)
        shown = try club.request("GET", "/v1/channels/club-r1").json
        #expect(shown?[member: "recording"] == ["events": 10, "limit": 100_000, "bytes": 1_000, "stopped": true], "\(String(describing: shown))")
        #expect(try create("club-r2", through: club).errorCode == "recording_quota_exceeded")

        // Deleting the full recording frees its key's bytes.
        #expect(try club.request("DELETE", "/v1/channels/club-r1").status == 200)
        #expect(try create("club-r2", through: club).status == 201)
        #expect(try club.request("POST", "/v1/channels/club-r2/events", json: Self.hundredByteEvents(10...11)).status == 202)
        #expect(try club.request("GET", "/v1/channels/club-r2").json?[member: "recording"] == ["events": 2, "limit": 100_000, "bytes": 200, "stopped": false])
    }
}
