import APNs
import APNsMock
import Foundation
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore
import NATS
import NATSServers
import TouchlineRuntime
import TouchlineTesting

/// Several gateways on one NATS JetStream cluster (the `jetstream` store backend): any of them
/// takes any request, each channel is run by the gateway owning its partition, and what reaches
/// APNs keeps each channel's order. The gateways' behaviour runs in process on the in-memory
/// cluster and APNs (``InProcessCluster``); events published straight to the servers' mapped
/// subjects, a NATS server killed and a gateway process killed run on a real 3-node cluster
/// against the strict mock.
@Suite("Gateways on a cluster", .gatewaysInProcess)
struct ClusterGatewayTests {
    static let partitions = 8
    /// Small, so that partitions get snapshots and are taken over from them.
    static let snapshotLogBytes = 1_024

    /// A gateway of the cluster, in this process, sending to `apns`.
    static func gateway(_ name: String, cluster: ClusterUnderTest, apns: MockAPNsFixture,
                        configure: @escaping (inout GatewayConfiguration) -> Void = { _ in }) throws -> GatewayFixture {
        try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/\(name)", backends: cluster.backends) { configuration in
            configuration.store = StoreSettings(backend: .jetstream,
                                                jetStream: JetStreamSettings(servers: cluster.urls, instance: InstanceID(name)!, partitions: Self.partitions,
                                                                             snapshotLogBytes: Self.snapshotLogBytes))
            configure(&configuration)
        }
    }

    @Test func eventsPostedToEveryGatewayReachAPNsInEachChannelsOrder() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let gateways = try cluster.add(["g1", "g2"])
        let channels = (1...6).map { "match-\($0)" }
        try await Self.create(channels, through: gateways.map(\.patientAdmin))
        // Every event goes to the other gateway than the one before; the owner orders them.
        for minute in 1...20 {
            for (index, id) in channels.enumerated() {
                let api = gateways[(minute + index) % 2].patientAdmin
                let answer = try api.request("POST", "/v1/channels/\(id)/events", json: #"{"seq": \#(minute), "patch": {"minute": \#(minute)}}"#)
                #expect(answer.status == 202, "\(id) seq \(minute) through g\((minute + index) % 2 + 1): \(answer.text)")
            }
        }
        try await eventually("every channel's last minute at APNs") {
            Self.minutes(cluster.journal.broadcasts).values.count { $0.contains(20) } == channels.count
        }
        // Each APNs channel saw its minutes in increasing order (coalescing may skip some),
        // whichever gateway sent them.
        let minutes = Self.minutes(cluster.journal.broadcasts)
        #expect(minutes.count == channels.count)
        for (channel, seen) in minutes {
            #expect(seen == seen.sorted() && Set(seen).count == seen.count, "\(channel): \(seen)")
        }
        // Operators see the cluster: both connected, the partitions served once each, requests
        // handed over. The two gateways are read one after the other, so a partition moving
        // between the reads (the second gateway's share still settling) is read again.
        var served: [[Int64]] = []
        try await eventually("every partition served once, by one of the two") {
            served = []
            for gateway in gateways {
                let ready = try gateway.patientAdmin.request("GET", "/readyz")
                #expect(ready.status == 200, "\(ready.text)")
                let cluster = try #require(ready.json?[member: "cluster"], "\(ready.text)")
                #expect(cluster[member: "connected"] == .bool(true))
                #expect(cluster[member: "members"] == .array([.string("g1"), .string("g2")]), "\(ready.text)")
                guard case .array(let partitions)? = cluster[member: "servedPartitions"] else { continue }
                served.append(partitions.compactMap { if case .integer(let number) = $0 { number } else { nil } })
            }
            return served.flatMap { $0 }.sorted() == (0..<Int64(Self.partitions)).map { $0 }
        }
        let metrics = try gateways[0].patientAdmin.request("GET", "/metrics").text
        #expect(metrics.contains(#"touchline_cluster_connected{instance="g1"} 1"#))
        #expect(metrics.contains(#"touchline_cluster_partitions_served{instance="g1"} \#(served[0].count)"#), "\(metrics)")
        #expect(metrics.contains(#"touchline_cluster_forwarded_requests_total{instance="g1",outcome="answered"}"#))
        // Either gateway lists every channel of the cluster, page by page.
        for gateway in gateways {
            let first = try gateway.patientAdmin.request("GET", "/v1/channels?limit=4")
            let firstPage = try #require(first.json, "\(first.text)")
            let next = try #require(firstPage.string("next"), "\(first.text)")
            let second = try gateway.patientAdmin.request("GET", "/v1/channels?limit=4&after=\(next)")
            let listed = [firstPage, try #require(second.json)].flatMap { page -> [String] in
                guard case .array(let listed)? = page[member: "channels"] else { return [] }
                return listed.compactMap { $0.string("id") }
            }
            #expect(listed == channels.sorted() && second.json?.string("next") == nil, "\(first.text) \(second.text)")
        }
        // Partitions were snapshotted along the way (and a partition taken up reads its snapshot).
        let written = try gateways.enumerated().map { index, gateway in
            metricValue(try gateway.patientAdmin.request("GET", "/metrics").text,
                        #"touchline_cluster_snapshots_total{instance="g\#(index + 1)",outcome="written"}"#) ?? 0
        }
        #expect(written.reduce(0, +) >= 1, "\(written)")
        // `/v1/apps/default/...` is `/v1/...` on a cluster too: a create through either gateway
        // lands at its owner, and either lists the whole cluster.
        let extra = ["match-7", "match-8"]
        for (index, id) in extra.enumerated() {
            let created = try gateways[index].patientAdmin.request("POST", "/v1/apps/default/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#)
            #expect(created.status == 201, "\(created.text)")
        }
        for gateway in gateways {
            let listed = try gateway.patientAdmin.request("GET", "/v1/apps/default/channels?limit=100")
            guard case .array(let items)? = listed.json?[member: "channels"] else { Issue.record("\(listed.text)"); continue }
            #expect(items.compactMap { $0.string("id") } == (channels + extra).sorted(), "\(listed.text)")
        }
        #expect(try gateways[0].patientAdmin.request("POST", "/v1/apps/default/channels/match-8/events", json: #"{"seq": 1, "patch": {"minute": 99}}"#).status == 202)
        try await eventually("match-8's event at APNs") { Self.minutes(cluster.journal.broadcasts).values.contains { $0.contains(99) } }
    }

    /// The token registry is the cluster's: a fan registered through one gateway is in the
    /// audience of a personal job run by another, and listed by every gateway.
    @Test func aJobOnOneGatewayReachesTheFansRegisteredThroughEveryGateway() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        // Serving before the job starts, as the cluster job tests do: a job started while
        // partitions still move between the gateways timed out in one CI run (a rebalance does
        // not save a slice before moving it; noted under issue 14).
        let gateways = try await cluster.serving()
        let fans = (0..<6).map(GatewayPersonalAPITests.token)
        for (n, token) in fans.enumerated() {
            try GatewayDeadLetterTests.register(token, follows: "team:ARS", user: "fan-\(n)", on: gateways[n % 2].patientAdmin)
        }
        // Registered through g1, listed by g2 as soon as g2's copy has applied it (moments later).
        try await eventually("g2 to list fan-0's token") {
            (try? gateways[1].patientAdmin.request("GET", "/v1/tokens?userId=fan-0").text.contains(fans[0])) == true
        }
        // The job counts on what its accepting gateway's copy has applied: all six, once the copies agree.
        try await ClusterPersonalJobTests.copiesAgree(gateways.map(\.patientAdmin))
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: gateways[1].patientAdmin)
        #expect(job.progress?.integer("targeted") == 6 && job.progress?.integer("sent") == 6, "\(String(describing: job.progress))")
        let starts = cluster.pushedTokens
        #expect(Set(starts) == Set(fans) && starts.count == 6)
    }

    /// Events published straight to the cluster (`touchline.in.<channel>`, as a provider's own
    /// NATS client would) are taken by the channel's owner as the HTTP route takes them: in
    /// order, each state at APNs; refused ones (bad JSON, unknown channel, a field out of range)
    /// land on `touchline.rejected.<channel>` with their error. On the servers: the subject
    /// mapping that puts each channel on its partition is theirs.
    @Test(.heavy(weight: 3)) func eventsPublishedStraightToTheClusterAreTakenLikeHTTPAndRefusedOnesRecorded() async throws {
        let servers = try await NATSCluster.start(mappings: ["touchline.in.*": "touchline.ingest.{{partition(\(Self.partitions),1)}}.{{wildcard(1)}}"])
        let cluster = ClusterUnderTest.servers(servers)
        let apns = try MockAPNsFixture()
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try started.add(["g1", "g2"].map { try Self.gateway($0, cluster: cluster, apns: apns) })
        let channels = ["match.1", "match-2", "match:3"]
        try await Self.create(channels, through: [gateways[0].patientAdmin])
        let apnsIDs = try Self.apnsIDs(of: channels, through: gateways[1].patientAdmin)
        let provider = try NATSProvider(cluster: cluster)
        for minute in 1...15 {
            for id in channels {
                let token = id.replacingOccurrences(of: ".", with: "~")
                let body = minute % 5 == 0 ? #"{"events": [{"seq": \#(minute), "patch": {"minute": \#(minute)}}]}"# : #"{"seq": \#(minute), "patch": {"minute": \#(minute)}}"#
                try await provider.publish(body, to: "touchline.in.\(token)")
            }
        }
        try await provider.publish(#"{"seq": "sixteen", "patch": {}}"#, to: "touchline.in.match-2")
        try await provider.publish("not json", to: "touchline.in.match-2")
        try await provider.publish(#"{"seq": 1, "patch": {"minute": 1}}"#, to: "touchline.in.no-such-match")
        try await eventually("every channel's minute 15 at APNs") {
            let minutes = Self.minutes(apns.mock.recordedRequests(), apnsIDs: apnsIDs)
            return channels.allSatisfy { minutes[$0]?.last == 15 }
        }
        let minutes = Self.minutes(apns.mock.recordedRequests(), apnsIDs: apnsIDs)
        for id in channels {
            #expect(minutes[id] == minutes[id]?.sorted(), "\(id): \(minutes[id] ?? [])")
        }
        // Partitions are taken in parallel: the refusals of one channel keep their order.
        let rejected = try await provider.collect(3, from: "touchline.rejected.>")
        let records = rejected.compactMap { try? JSONParser.parse($0.payload) }
        #expect(records.count == 3)
        #expect(rejected.filter { $0.subject == "touchline.rejected.match-2" }.count == 2)
        let ofMatch2 = records.filter { $0.string("channel") == "match-2" }
        #expect(ofMatch2.map { $0.string("error") } == ["invalid_event", "malformed_json"], "\(records)")
        #expect(ofMatch2.first?[member: "event"]?[member: "seq"] == .string("sixteen"))
        #expect(ofMatch2.last?[member: "event"] == .string("not json"))
        #expect(records.contains { $0.string("channel") == "no-such-match" && $0.string("error") == "channel_not_found" })
        #expect(records.allSatisfy { $0.integer("status") != nil && $0.string("message") != nil })
    }

    /// One of the three NATS servers killed with SIGKILL under load, then brought back: the
    /// gateways ride out the elections (a publish without an answer is sent again with its
    /// message id), ingest goes on (a request may get 503 meanwhile, and is sent again), and
    /// every acknowledged state reaches APNs. Then every gateway stops and new ones start on the
    /// same cluster: the channels and their states are all there.
    @Test(.heavy(weight: 3, long: true)) func aKilledNATSServerLosesNothingAcknowledgedNorDoesARestartOfEveryGateway() async throws {
        let run = try await LoadedCluster.start()
        defer { run.shutDown() }
        let (servers, cluster, apns, channels, apnsIDs, load) = (run.servers, run.cluster, run.apns, run.channels, run.apnsIDs, run.load)
        var gateways = run.gateways
        let before = load.acknowledgedCount
        await servers.kill(0)
        try await eventually("ingest going on without the killed server", timeout: .seconds(60)) { load.acknowledgedCount > before + 200 }
        try await servers.restart(0)
        try await eventually("ingest going on after it is back", timeout: .seconds(60)) { load.acknowledgedCount > before + 400 }
        try await run.expectEveryAcknowledgedStateInOrder("a server killed and back")
        let acknowledged = load.lastAcknowledged

        // Every gateway stops; two new ones find every channel as it was.
        for gateway in gateways { await gateway.shutDown(removingData: false) }
        gateways = try run.started.add(["g3", "g4"].map { try Self.gateway($0, cluster: cluster, apns: apns) })
        var next: [String: Int] = [:]
        for (index, id) in channels.enumerated() {
            let api = gateways[index % 2].patientAdmin
            var shown: JSONValue?
            try await eventually("channel \(id) served again") {
                shown = try? api.request("GET", "/v1/channels/\(id)").json
                return shown?.string("apnsChannelId") != nil
            }
            #expect(shown?.string("apnsChannelId") == apnsIDs[id])
            let lastSeq = Int(shown?.integer("lastSeq") ?? -1)
            #expect(lastSeq >= acknowledged[id] ?? 0, "\(id): \(String(describing: shown))")
            next[id] = lastSeq + 1
            // The two new gateways are sharing the partitions out: a request may meet one moving.
            try await eventually("event \(next[id]!) of \(id) acknowledged") {
                (try? api.request("POST", "/v1/channels/\(id)/events", json: #"{"seq": \#(next[id]!), "patch": {"minute": \#(next[id]!)}}"#))?.status == 202
            }
        }
        try await eventually("the new gateways' pushes at APNs") {
            let minutes = ClusterGatewayTests.minutes(apns.mock.recordedRequests(), apnsIDs: apnsIDs)
            return channels.allSatisfy { minutes[$0]?.last == next[$0] }
        }
    }

    /// `touchline serve` processes on the cluster; one is killed with SIGKILL while events pour in
    /// through both. Its partitions move to the other, whose pushes of them resume within 5 s;
    /// every acknowledged event's state reaches APNs; a state goes twice only where its push was
    /// in flight at the kill (once per moved channel at most).
    @Test(.heavy(weight: 3, long: true), .enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func aKilledGatewaysChannelsMoveAndNothingAcknowledgedIsLost() async throws {
        let cluster = try await NATSCluster.start()
        let apns = try MockAPNsFixture()
        // The processes die with their ServeProcess; the mock is stopped however the test ends.
        defer { Task { await apns.shutDown(); withExtendedLifetime(cluster) {} } }
        func serve(_ name: String) async throws -> ServeProcess {
            let store = #"{"backend": "jetstream", "servers": [\#(cluster.urls.map { "\"\($0)\"" }.joined(separator: ","))], "instance": "\#(name)", "partitions": \#(Self.partitions), "snapshotLogBytes": \#(Self.snapshotLogBytes)}"#
            return try await ServeProcess(dataDirectory: apns.directory + "/\(name)", arguments: apns.serveArguments + ["--store", store, "--log-level", "notice"])
        }
        let gateways = [try await serve("g1"), try await serve("g2")]
        let partitioning = ChannelPartitioning(count: Self.partitions)!
        let channels = (1...16).map { "match-\($0)" }
        try await Self.create(channels, through: gateways.map(\.patientAdmin))
        try await Self.untilEachServesItsShare(gateways)

        // Events every 50 ms per channel, each through the gateways in turn, from a thread of its own.
        let load = EventLoad(channels: channels, gateways: gateways.map(\.patientAdmin))
        load.start()
        try await eventually("events acknowledged through both gateways") { load.acknowledgedCount > 200 }
        let victim = Self.served(by: gateways[0]).count >= Self.served(by: gateways[1]).count ? 0 : 1
        let moved = Set(channels.filter { Self.served(by: gateways[victim]).contains(partitioning.partition(of: $0)) })
        let apnsIDs: [String: String]
        do { apnsIDs = try Self.apnsIDs(of: channels, through: gateways[1 - victim].patientAdmin) } catch {
            Issue.record("\(error); the gateway's log ends: \(gateways[1 - victim].logLines.suffix(20).joined(separator: "\n"))")
            throw error
        }
        let killedAt = UnixTime(nanoseconds: Int64(Date().timeIntervalSince1970 * 1e9))
        gateways[victim].kill9()
        load.drop(gateway: victim)
        try await eventually("a push of every moved channel after the kill") {
            let after = apns.mock.recordedRequests().filter { $0.endpoint == .broadcast && $0.status == 200 && $0.receivedAt > killedAt }
            return moved.allSatisfy { id in after.contains { $0.channelID == apnsIDs[id] } }
        }
        try await Task.sleep(for: .seconds(1))
        await load.stop()
        let acknowledged = load.lastAcknowledged

        // The last acknowledged state of every channel reaches APNs (or a later one: an event the
        // killed gateway stored without answering).
        try await eventually("every channel's last acknowledged minute at APNs", timeout: .seconds(30)) {
            let minutes = Self.minutes(apns.mock.recordedRequests(), apnsIDs: apnsIDs)
            return channels.allSatisfy { (minutes[$0]?.last ?? 0) >= (acknowledged[$0] ?? 0) }
        }
        let broadcasts = apns.mock.recordedRequests().filter { $0.endpoint == .broadcast && $0.status == 200 }
        let minutes = Self.minutes(broadcasts, apnsIDs: apnsIDs)
        for id in channels {
            let seen = minutes[id] ?? []
            let twice = seen.count - Set(seen).count
            #expect(twice <= (moved.contains(id) ? 1 : 0), "\(id) pushed a state twice \(twice) times: \(seen)")
            #expect(seen == seen.sorted(), "\(id) went back in time: \(seen)")
        }
        // Pushes of the moved channels resumed within 5 s of the kill.
        let firstAfter = moved.compactMap { id in broadcasts.first { $0.channelID == apnsIDs[id] && $0.receivedAt > killedAt }?.receivedAt }
        let resumed = Duration.nanoseconds((firstAfter.max() ?? killedAt).nanoseconds - killedAt.nanoseconds)
        // The 5 s target is the benchmark's to hold (on a quiet machine this takes 2 to 3 s); here,
        // beside the rest of a parallel suite, only a bound that a lost handover would miss.
        print("cluster failover: the moved channels' first pushes came \(resumed) after the kill (lease TTL 3 s)")
        #expect(resumed < .seconds(20), "pushes resumed \(resumed) after the kill")
        #expect(!moved.isEmpty)
        // The survivor took the moved partitions up from the snapshots the killed gateway wrote.
        let survivor = gateways[1 - victim]
        let restored = metricValue(try survivor.patientAdmin.request("GET", "/metrics").text,
                                   #"touchline_cluster_snapshots_total{instance="g\#(2 - victim)",outcome="restored"}"#)
        #expect((restored ?? 0) >= 1, "snapshots restored by the survivor: \(String(describing: restored))")
        #expect(survivor.terminate() == 0)
    }

    /// Creates `channels` through the gateways in turn (each hands a create to its channel's
    /// owner). A create answered too late for the client, on a busy machine, is answered 200
    /// when sent again.
    static func create(_ channels: [String], through gateways: [GatewayTestClient]) async throws {
        for (index, id) in channels.enumerated() {
            let api = gateways[index % gateways.count]
            try await eventually("channel \(id) created") {
                [200, 201].contains((try? api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#))?.status ?? 0)
            }
        }
    }

    /// The partitions a gateway process serves now, from its log.
    /// Until each of `gateways` serves its share of the partitions, and together every one, by
    /// their logs: a gateway that joins takes its share a partition at a time, so one serving
    /// something has not settled yet, and a test that reads who owns what waits for this.
    static func untilEachServesItsShare(_ gateways: [ServeProcess]) async throws {
        try await eventually("each gateway serving its share of the partitions") {
            let shares = gateways.map { served(by: $0) }
            return shares.allSatisfy { $0.count == partitions / gateways.count }
                && shares.reduce(into: Set<Int>()) { $0.formUnion($1) }.count == partitions
        }
    }

    static func served(by gateway: ServeProcess) -> Set<Int> {
        var served = Set<Int>()
        for line in gateway.logLines {
            if let match = line.firstMatch(of: /took up partition (\d+)/) { served.insert(Int(match.1)!) }
            if let match = line.firstMatch(of: /let go of partition (\d+)/) { served.remove(Int(match.1)!) }
        }
        return served
    }

    /// Each channel's APNs channel id, read through a gateway (any: it forwards).
    static func apnsIDs(of channels: [String], through api: GatewayTestClient) throws -> [String: String] {
        var ids: [String: String] = [:]
        for id in channels {
            ids[id] = try #require(try api.request("GET", "/v1/channels/\(id)").json?.string("apnsChannelId"), "\(id)")
        }
        return ids
    }

    /// The minutes the broadcasts carried, in order, by APNs channel id.
    static func minutes(_ broadcasts: [Broadcast]) -> [String: [Int]] {
        var minutes: [String: [Int]] = [:]
        for broadcast in broadcasts {
            let body = String(decoding: broadcast.payload, as: UTF8.self)
            guard let range = body.range(of: #""minute":"#) else { continue }
            minutes[broadcast.channelID, default: []].append(Int(body[range.upperBound...].prefix { $0.isNumber })!)
        }
        return minutes
    }

    /// The minutes each channel's broadcasts carried, in order (`apnsIDs`: each channel's APNs id).
    static func minutes(_ broadcasts: [Broadcast], apnsIDs: [String: String]) -> [String: [Int]] {
        let byAPNsID = minutes(broadcasts)
        return apnsIDs.reduce(into: [:]) { minutes, channel in minutes[channel.key] = byAPNsID[channel.value] }
    }

    /// The minutes each channel's broadcasts carried, in arrival order.
    static func minutes(_ requests: [MockAPNsRecordedRequest], apnsIDs: [String: String]) -> [String: [Int]] {
        let channelOf = Dictionary(uniqueKeysWithValues: apnsIDs.map { ($1, $0) })
        var minutes: [String: [Int]] = [:]
        for request in requests where request.endpoint == .broadcast && request.status == 200 {
            guard let channel = request.channelID.flatMap({ channelOf[$0] }), let range = request.bodyText.range(of: #""minute":"#) else { continue }
            minutes[channel, default: []].append(Int(request.bodyText[range.upperBound...].prefix { $0.isNumber })!)
        }
        return minutes
    }
}

/// Events posted to every channel in turn, round-robin over the gateways still up, from a
/// thread of its own; remembers each channel's highest acknowledged `seq` (= its `minute`).
final class EventLoad: Sendable {
    private struct State {
        var running = true
        var down: Set<Int> = []
        var acknowledged: [String: Int] = [:]
        var count = 0
        /// Answers other than 202, by status, error code and whether they carried `Retry-After`.
        var refusals: [String: Int] = [:]
    }

    private let channels: [String]
    private let gateways: [GatewayTestClient]
    private let state: Mutex<State>
    private let finished = DispatchSemaphore(value: 0)

    /// `acknowledged`: each channel's last `seq` acknowledged before (an earlier load's): this
    /// one goes on after it.
    init(channels: [String], gateways: [GatewayTestClient], after acknowledged: [String: Int] = [:]) {
        self.channels = channels
        self.gateways = gateways
        var state = State()
        state.acknowledged = acknowledged
        self.state = Mutex(state)
    }

    func start() {
        let acknowledged = lastAcknowledged
        Thread { [self] in
            var next = Dictionary(uniqueKeysWithValues: channels.map { ($0, (acknowledged[$0] ?? 0) + 1) })
            var turn = 0
            while state.withLock({ $0.running }) {
                for id in channels {
                    let down = state.withLock { $0.down }
                    let up = gateways.indices.filter { !down.contains($0) }
                    turn += 1
                    let seq = next[id]!
                    let answer = try? gateways[up[turn % up.count]].postEvent(to: id, seq: seq)
                    // A 503 (the channel moving, the cluster electing) is sent again next round;
                    // the other channels go on meanwhile.
                    if answer?.status == 202 {
                        state.withLock { $0.acknowledged[id] = seq; $0.count += 1 }
                        next[id] = seq + 1
                    } else if let answer {
                        let retry = answer.head.lowercased().contains("retry-after:") ? "Retry-After" : "no Retry-After"
                        let key = "\(answer.status) \(answer.json?.string("error") ?? "?") \(retry)"
                        state.withLock { $0.refusals[key, default: 0] += 1 }
                    }
                }
                usleep(50_000)
            }
            finished.signal()
        }.start()
    }

    /// The gateway is gone: its requests failed and are not counted; the rest go elsewhere.
    func drop(gateway: Int) { state.withLock { _ = $0.down.insert(gateway) } }

    var acknowledgedCount: Int { state.withLock { $0.count } }
    var refusals: [String: Int] { state.withLock { $0.refusals } }
    var lastAcknowledged: [String: Int] { state.withLock { $0.acknowledged } }

    /// Stops and returns once the last request is answered (waited for on a thread of its own).
    func stop() async {
        state.withLock { $0.running = false }
        let finished = finished
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                finished.wait()
                done.resume()
            }.start()
        }
    }
}

extension GatewayTestClient {
    /// Posts event `seq` (its minute the same number) to channel `id`.
    func postEvent(to id: String, seq: Int) throws -> Response {
        try request("POST", "/v1/channels/\(id)/events", json: #"{"seq": \#(seq), "patch": {"minute": \#(seq)}}"#)
    }
}

/// A provider's own NATS client: publishes to the cluster and reads what it keeps.
private final class NATSProvider: Sendable {
    let loop: EventLoop
    let jetStream: any JetStreamClient

    init(cluster: ClusterUnderTest) throws {
        loop = EventLoop.start(name: "provider")
        jetStream = try cluster.connect(name: "provider", loop: loop)
    }

    deinit {
        jetStream.messaging.close()
        loop.stop()
    }

    /// Publishes and waits for the cluster's acknowledgement.
    func publish(_ text: String, to subject: String) async throws {
        let result = await withCheckedContinuation { done in
            jetStream.publish(Array(text.utf8), to: subject, loop: loop) { done.resume(returning: $0) }
        }
        _ = try result.get()
    }

    /// The first `count` messages of `subject`'s stream, in order.
    func collect(_ count: Int, from subject: String) async throws -> [NATSMessage] {
        let received = Mutex<[NATSMessage]>([])
        let subscription = try jetStream.subscribeOrdered(to: subject, from: .all, loop: loop) { message in received.withLock { $0.append(message) } }
        defer { subscription.cancel() }
        try await eventually("\(count) messages on \(subject)") { received.withLock { $0.count } >= count }
        return received.withLock { Array($0.prefix(count)) }
    }
}

extension GatewayFixture {
    /// The admin client, waiting up to 30 s for an answer: beside a loaded suite, a request handed
    /// to another gateway while a partition moves can take longer than the usual 10 s.
    var patientAdmin: GatewayTestClient { admin.waiting(upTo: 30) }
}


/// The gateways a test started, shut down when it ends however it ends (a gateway released
/// while it runs would leave its loops running without it), then the mock, with the cluster
/// kept until then.
final class StartedGateways: Sendable {
    private let gateways = Mutex<[GatewayFixture]>([])

    func add(_ started: [GatewayFixture]) -> [GatewayFixture] {
        gateways.withLock { $0 += started }
        return started
    }

    /// Gateways `names` on `cluster`, each configured by `configure`, once every one serves its
    /// share of the partitions (a test started before would see its channels move under it).
    func serving(_ names: [String] = ["g1", "g2"], on cluster: ClusterUnderTest, apns: MockAPNsFixture,
                 configure: @escaping (inout GatewayConfiguration) -> Void = { _ in }) async throws -> [GatewayFixture] {
        let started = add(try names.map { try ClusterGatewayTests.gateway($0, cluster: cluster, apns: apns, configure: configure) })
        try await eventually("every gateway serves partitions") { ClusterPersonalJobTests.everyGatewayServes(started.map(\.patientAdmin)) }
        return started
    }

    func shutDown(after apns: MockAPNsFixture, keeping cluster: ClusterUnderTest) {
        let gateways = gateways.withLock { $0 }
        Task {
            for gateway in gateways { await gateway.shutDown(removingData: false) }
            await apns.shutDown()
            withExtendedLifetime(cluster) {}
        }
    }
}
