import APNsMock
import Foundation
import NATSServers
import Testing
import TestSlots
@testable import Touchline
@testable import TouchlineChannels
import TouchlineCore

/// Feed recordings on a cluster: a recording channel's events, posted through both gateways,
/// are exported through either (an export larger than one NATS message is handed over in
/// parts), and the recording outlives its owner: the next owner counts it, adds to it and
/// exports it whole (docs/cluster.md, "Feed recordings on the cluster"). On the in-memory
/// cluster, which holds messages to the servers' 1 MiB payload limit.
@Suite("Feed recordings on a cluster", .heavy(long: true))
struct ClusterFeedRecordingTests {
    /// `count` clock events from `seq` on, as one request's body.
    static func clocks(from seq: Int, count: Int) -> String {
        let events = (seq..<seq + count).map { #"{"seq": \#($0), "type": "clock", "clockSeconds": \#($0)}"# }
        return #"{"events": [\#(events.joined(separator: ","))]}"#
    }

    static func seqs(of feed: RecordedFeed) -> [Int64] {
        feed.entries.compactMap { entry -> Int64? in
            if case .event(let event) = entry.input, case .integer(let seq)? = event[member: "seq"] { seq } else { nil }
        }
    }

    @Test func aRecordingIsExportedThroughAnyGatewayAndOutlivesItsOwner() async throws {
        let cluster = try await ClusterUnderTest.start(.inMemory)
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns) { $0.maxBodyBytes = 256 * 1_024 }
        let body = #"{"id": "rec-match", "storagePolicy": "no-storage", "recordFeed": true, "attributes": \#(GatewayFixture.matchAttributes)}"#
        let created = try gateways[0].patientAdmin.request("POST", "/v1/channels", json: body)
        #expect(created.status == 201 && created.json?[member: "recordFeed"] == .bool(true), "\(created.text)")
        let (owner, other) = try ClusterRolloverTests.owner(of: "rec-match", among: gateways)
        #expect(try other.patientAdmin.request("POST", "/v1/channels/rec-match/events", json: #"{"seq": 1, "type": "status", "status": "live"}"#).status == 202)
        // 12,000 events through both gateways: an export of more than one NATS message (1 MiB).
        for (index, seq) in stride(from: 2, through: 12_001, by: 1_000).enumerated() {
            let through = index % 2 == 0 ? owner : other
            let posted = try through.patientAdmin.request("POST", "/v1/channels/rec-match/events", json: Self.clocks(from: seq, count: 1_000))
            #expect(posted.status == 202, "\(posted.text)")
        }
        let forwarded = try other.patientAdmin.request("GET", "/v1/channels/rec-match/events/export")
        #expect(forwarded.status == 200 && forwarded.body.count > 1 << 20, "\(forwarded.status) \(forwarded.body.count) bytes")
        let first = try RecordedFeed(jsonLines: forwarded.body)
        #expect(first.header.channelID == "rec-match" && first.header.channel.attributes?.homeCode == "ARS")
        let firstSeqs = Self.seqs(of: first)
        #expect(firstSeqs == Array(1...12_001), "every accepted event once, in seq order: \(firstSeqs.count) events, \(firstSeqs.prefix(3)) ... \(firstSeqs.suffix(3))")
        #expect(zip(first.entries, first.entries.dropFirst()).allSatisfy { $0.receivedAt <= $1.receivedAt })

        // The owner leaves: the other gateway takes the channel up, counts its recording from the
        // cluster, records on after it and exports the whole feed with its end.
        await owner.shutDown(removingData: false)
        let api = other.patientAdmin
        try await eventually("the channel taken up with its recording") {
            (try? api.request("GET", "/v1/channels/rec-match").json)?[member: "recording"]?[member: "events"] == .integer(12_001)
        }
        #expect(try api.request("POST", "/v1/channels/rec-match/events", json: #"{"seq": 12002, "type": "goal", "team": "home", "player": "Saka", "minute": 90}"#).status == 202)
        #expect(try api.request("POST", "/v1/channels/rec-match/end", json: #"{"finalState": null}"#).status == 202)
        let export = try api.request("GET", "/v1/channels/rec-match/events/export")
        #expect(export.status == 200, "\(export.text.prefix(300))")
        let feed = try RecordedFeed(jsonLines: export.body)
        let seqs = Self.seqs(of: feed)
        #expect(seqs == Array(1...12_002), "\(seqs.count) events, \(seqs.prefix(3)) ... \(seqs.suffix(3))")
        guard case .end(let finalState, _)? = feed.entries.last?.input else {
            Issue.record("the export ends with the channel's end")
            return
        }
        #expect(finalState?[member: "homeScore"] == .integer(1), "\(String(describing: finalState))")
    }
}
