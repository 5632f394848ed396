import APNsMock
import Foundation
import NATS
import NATSServers
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineTesting

/// Personal jobs on a cluster: a job accepted by one gateway runs on all of them, a slice at a
/// time where its partition is owned, and a gateway killed in the middle of it loses nothing
/// (docs/cluster.md, "Personal jobs on the cluster"). On the in-memory cluster: in process for
/// the job's fan-out, against the strict mock where its latency or its check of a start's
/// timestamp matters; a gateway's death in the middle of a job runs on a real 3-node cluster
/// (ClusterJobKillTests).
@Suite("Personal jobs on a cluster", .gatewaysInProcess)
struct ClusterPersonalJobTests {
    /// `count` distinct push-to-start tokens spread over every first hex digit, in a stable order.
    static func tokens(_ count: Int) -> [String] {
        var random = SplitMix64(seed: 2_026)
        return (0..<count).map { _ in (0..<4).map { _ in String(random.next(), radix: 16).padded(to: 16) }.joined() }
    }

    /// Registers `tokens` as followers of team:ARS through `api`, `perRequest` at a time.
    static func register(_ tokens: [String], through api: GatewayTestClient, perRequest: Int = 1_000) throws {
        for start in stride(from: 0, to: tokens.count, by: perRequest) {
            let items = tokens[start..<min(start + perRequest, tokens.count)].map {
                #"{"token": "\#($0)", "kind": "push-to-start", "follows": ["team:ARS"]}"#
            }
            let registered = try api.request("POST", "/v1/tokens/batch", json: #"{"tokens": [\#(items.joined(separator: ","))]}"#)
            guard registered.status == 201 else { throw Failure("registering tokens: \(registered.status) \(registered.text)") }
        }
    }

    /// Waits until every gateway's copy of the token registry has applied the same log position.
    static func copiesAgree(_ admins: [GatewayTestClient]) async throws {
        try await eventually("every gateway's registry copy at the same log position") {
            let applied = admins.map { admin -> Int64? in
                guard case .integer(let position)? = (try? admin.request("GET", "/readyz").json)?[member: "cluster"]?[member: "registry"]?[member: "applied"]
                else { return nil }
                return position
            }
            return applied.allSatisfy { $0 != nil } && Set(applied.compactMap { $0 }).count == 1
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// How many partitions gateways g1, g2, ... (in that order) each serve now.
    static func servedCounts(_ admins: [GatewayTestClient]) -> [Int] {
        admins.enumerated().map { index, admin in
            let metrics = try? admin.request("GET", "/metrics").text
            return Int(metrics.flatMap { metricValue($0, #"touchline_cluster_partitions_served{instance="g\#(index + 1)"}"#) } ?? 0)
        }
    }

    /// Whether gateways g1, g2, ... (in that order) serve every partition of the cluster between
    /// them, each its share: a job started before would see partitions (and its slices) move
    /// while it runs, and a slice moved by a rebalance sends again what it sent since its last
    /// save (a rebalance does not save it first; a graceful stop does).
    static func everyGatewayServes(_ admins: [GatewayTestClient], partitions: Int = ClusterGatewayTests.partitions) -> Bool {
        let counts = servedCounts(admins)
        return counts.reduce(0, +) == partitions && counts.allSatisfy { $0 >= partitions / admins.count }
    }

    /// The slices' last saved progress in the cluster's job bucket, read by a client of the test
    /// (a finished job's slices are deleted: they are absent).
    static func savedSlices(in cluster: ClusterUnderTest) async throws -> [SharedJobPlan.SliceKey: SliceEntry] {
        let loop = EventLoop.start(name: "bucket-reader")
        defer { loop.stop() }
        let jetStream = try cluster.connect(name: "bucket-reader", loop: loop)
        defer { jetStream.messaging.close() }
        let read = Mutex<(entries: [SharedJobPlan.SliceKey: SliceEntry], done: Bool)>(([:], false))
        let subscription = try jetStream.subscribeOrdered(to: SliceSave.subjects, from: .lastPerSubject, loop: loop) { message in
            guard let save = SliceSave(message) else { return }
            read.withLock {
                $0.entries[save.key] = save.entry
                if message.stream?.pending == 0 { $0.done = true }
            }
        }
        defer { subscription.cancel() }
        try await eventually("the job bucket's slices read") { read.withLock { $0.done } }
        return read.withLock { $0.entries }
    }

    /// Two gateways in this process: a job accepted by one reaches every follower once, its
    /// slices run on both, and either gateway shows its final counts. Saves are made as often
    /// as they can be, so a slice often finishes while one is out: its last save still goes.
    @Test func aJobAcceptedByOneGatewayRunsOnEveryGatewayAndReachesEachFanOnce() async throws {
        let cluster = InProcessCluster()
        defer { cluster.shutDown() }
        let gateways = try await cluster.serving { $0.personalQueue.saveInterval = .milliseconds(1) }
        let fans = Self.tokens(400)
        try Self.register(fans, through: gateways[0].patientAdmin, perRequest: 50)
        let job = try await GatewayDeadLetterTests.runJob(GatewayPersonalAPITests.startBody, on: gateways[0].patientAdmin)
        #expect(job.progress?.integer("targeted") == 400 && job.progress?.integer("sent") == 400 && job.progress?.integer("pending") == 0,
                "\(String(describing: job.progress))")
        // The other gateway's view follows the job bucket through its watch: it catches up.
        try await eventually("the other gateway to see the job done") {
            (try? gateways[1].patientAdmin.request("GET", "/v1/personal/\(job.id)").json?.string("status")) == "done"
        }
        let otherView = try gateways[1].patientAdmin.request("GET", "/v1/personal/\(job.id)").json
        #expect(otherView?.string("status") == "done" && otherView?.integer("sent") == 400)

        let starts = cluster.pushedTokens
        #expect(starts.count == 400 && Set(starts) == Set(fans), "each fan once: \(starts.count) starts")
        // Once the job's entry holds its final counts, its slices' keys are deleted from the
        // bucket (deletion markers: no purge, which would move the gateways' watches).
        var remaining = try await Self.savedSlices(in: cluster.underTest)
        for _ in 0..<100 where !remaining.isEmpty {
            try await Task.sleep(for: .milliseconds(200))
            remaining = try await Self.savedSlices(in: cluster.underTest)
        }
        #expect(remaining.isEmpty, "the finished job's slice keys deleted: \(remaining.count) left")
        // Operators see the slices each gateway started: 16 between them.
        let slicesStarted = try gateways.map { gateway in
            metricValue(try gateway.patientAdmin.request("GET", "/metrics").text, "touchline_personal_slices_started_total") ?? 0
        }
        #expect(slicesStarted.allSatisfy { $0 > 0 } && slicesStarted.reduce(0, +) == 16, "\(slicesStarted)")
    }

    /// A gateway stopped gracefully in the middle of a job saves its slices' checkpoints before
    /// it gives their partitions up; the other resumes them at once and finishes the job. A
    /// token goes twice only if its send was still out when the stop began. Which slices were
    /// handed over is read from a watch of the job bucket (the stopped gateway's last save of
    /// each, unfinished, then the other's), not from a look at the bucket before the stop, which
    /// a loaded run made after the stopping gateway had finished its slices.
    @Test(.heavy(long: true)) func aGatewayStoppingInTheMiddleOfAJobHandsItsSlicesOver() async throws {
        let cluster = try await ClusterUnderTest.start(.inMemory)
        // Each start answered after 250 ms, 8 in flight per gateway: g1's share takes about 19 s,
        // so that the stop comes in the middle of it however late a loaded run gets to it. At
        // 100 ms (7.5 s) a full clean run once reached the stop only after g1 had finished every
        // slice of its share: the test's task, on a cooperative pool that the suite's blocking
        // client calls hold, waited seconds between seeing a fifth sent and the stop.
        let apns = try MockAPNsFixture { $0.faults.latency = .milliseconds(250) }
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let maxInFlight = 8
        let gateways = try await started.serving(on: cluster, apns: apns) { $0.personalQueue.maxInFlight = maxInFlight }
        let fans = Self.tokens(1_200)
        try Self.register(fans, through: gateways[1].patientAdmin, perRequest: 50)
        let saves = try SliceSaves(in: cluster)
        let created = try gateways[1].patientAdmin.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")
        try await eventually("a fifth of the job sent") { apns.mock.counters().count(endpoint: .device, status: 200) >= 240 }
        func slicesStarted(by gateway: GatewayFixture) throws -> Double {
            metricValue(try gateway.patientAdmin.request("GET", "/metrics").text, "touchline_personal_slices_started_total") ?? 0
        }
        let startedByG2 = try slicesStarted(by: gateways[1])
        await gateways[0].shutDown(removingData: false)
        // g2 alone sends what is left at 32 a second: up to about 40 s.
        let progress = try await GatewayDeadLetterTests.finished(jobID, on: gateways[1].patientAdmin, timeout: .seconds(90))
        #expect(progress?.integer("targeted") == 1_200 && progress?.integer("sent") == 1_200, "\(String(describing: progress))")
        // The slices g1 was running when it stopped: its last save of each is unfinished (those
        // it finished before are not handed over). g2 saved each after it (the watch delivers in
        // the bucket's order: once g2's save of a slice is there, all of g1's are).
        var stopped: [SharedJobPlan.SliceKey: SliceEntry] = [:]
        do {
            try await eventually("g2's saves of the slices g1 was running when it stopped") {
                stopped = saves.lastSaves(by: "g1", ofJob: jobID).filter { !$0.value.isFinished }
                let savers = saves.savers(ofJob: jobID)
                return !stopped.isEmpty && stopped.keys.allSatisfy { savers[$0.slice.index]?.last == "g2" }
            }
        } catch {
            Issue.record("slices g1 stopped: \(stopped.keys.map(\.slice.index).sorted()); savers: \(saves.savers(ofJob: jobID).sorted { $0.key < $1.key })")
            throw error
        }
        #expect(try slicesStarted(by: gateways[1]) - startedByG2 >= Double(stopped.count),
                "g2 resumed the slices g1 was running when it stopped")
        var seen: [String: Int] = [:]
        for request in apns.mock.recordedRequests() where request.endpoint == .device && request.status == 200 {
            seen[request.deviceToken ?? "", default: 0] += 1
        }
        #expect(Set(seen.keys) == Set(fans))
        let twice = seen.values.count { $0 > 1 }
        #expect(twice <= maxInFlight, "\(twice) tokens went twice")
        print("cluster job handover: \(twice) tokens sent twice after a graceful stop")
    }

    /// Ending a channel cancels its kickoff on every gateway: the slices running on the gateway
    /// that does not own the channel stop too, and the rest of the audience counts as expired.
    @Test(.heavy) func endingAChannelCancelsItsKickoffOnEveryGateway() async throws {
        let cluster = try await ClusterUnderTest.start(.inMemory)
        // Each start answered after 250 ms, 4 in flight per gateway: the 400 starts take 12 s or more.
        let apns = try MockAPNsFixture { $0.faults.latency = .milliseconds(250) }
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns) { $0.personalQueue.maxInFlight = 4 }
        let api = gateways[0].patientAdmin
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "k1", "storagePolicy": "no-storage", "policy": {"endGracePeriodSeconds": 0}}"#)
        #expect(created.status == 201, "\(created.text)")
        try Self.register(Self.tokens(400), through: api, perRequest: 50)
        // A job counts on the registrations its accepting gateway's copy has applied: the kickoff
        // goes through g2 (and on to the channel's owner) once both copies hold all 400.
        try await Self.copiesAgree(gateways.map(\.patientAdmin))
        let kickoff = try gateways[1].patientAdmin.request("POST", "/v1/channels/k1/start", json: GatewayKickoffTests.startBody)
        let jobID = try #require(kickoff.json?.string("jobId"), "\(kickoff.text)")
        func starts() -> Int { apns.mock.recordedRequests().count { $0.endpoint == .device } }
        try await eventually("the kickoff under way") { starts() >= 20 }
        let running = Set(try await Self.savedSlices(in: cluster).filter { $0.key.jobID == jobID }.values.map(\.instance))
        #expect(running == ["g1", "g2"], "the kickoff runs on both gateways: \(running)")
        #expect(try api.request("POST", "/v1/channels/k1/end").status == 202)
        let atEnd = starts()

        let progress: JSONValue?
        do { progress = try await GatewayDeadLetterTests.finished(jobID, on: api) } catch {
            let slices = try await Self.savedSlices(in: cluster).filter { $0.key.jobID == jobID }
            Issue.record("\(try api.request("GET", "/v1/personal/\(jobID)").text) \(slices.sorted { $0.key < $1.key }.map { "\($0.key.slice.index):\($0.value.instance):\($0.value.isFinished):\($0.value.checkpoint.counters)" })")
            throw error
        }
        let sent = try #require(progress?.integer("sent")), expired = try #require(progress?.integer("expired"))
        #expect(progress?.integer("targeted") == 400 && sent + expired == 400, "\(String(describing: progress))")
        #expect(expired > 0 && sent < 400)
        // Beyond the starts in flight when the end committed, at most those the other gateway
        // sent before the cancellation reached it through the bucket (milliseconds at 4 in flight).
        #expect(starts() <= atEnd + 16, "\(starts()) starts, \(atEnd) at the end")
    }

    /// Scheduled kickoffs on a cluster: stored in the job bucket when accepted, listed and
    /// cancellable on every gateway, started at their time by whichever gateway owns the job's
    /// first slice then (here the one left after the accepting gateway stopped), and a
    /// cancelled one never sent.
    @Test(.heavy) func aScheduledKickoffWaitsInTheBucketAndStartsOnTimeWhicheverGatewayIsLeft() async throws {
        let cluster = try await ClusterUnderTest.start(.inMemory)
        // Starts stamped when they were scheduled would arrive six seconds old: the mock refuses them.
        let apns = try MockAPNsFixture { $0.startTimestampTolerance = .seconds(3) }
        let started = StartedGateways()
        defer { started.shutDown(after: apns, keeping: cluster) }
        let gateways = try await started.serving(on: cluster, apns: apns)
        let (g1, g2) = (gateways[0].patientAdmin, gateways[1].patientAdmin)
        let created = try g1.request("POST", "/v1/channels", json: #"{"id": "k1", "storagePolicy": "no-storage"}"#)
        let apnsID = try #require(created.json?.string("apnsChannelId"), "\(created.text)")
        let fans = Self.tokens(40)
        try Self.register(fans, through: g1)
        try await Self.copiesAgree(gateways.map(\.patientAdmin))
        let at = Int64(Date().timeIntervalSince1970) + 6
        let body = GatewayScheduledKickoffTests.body(at: at)
        let kept = try #require(try g2.request("POST", "/v1/channels/k1/start", json: body).json?.string("jobId"))
        let cancelled = try #require(try g2.request("POST", "/v1/channels/k1/start", json: body).json?.string("jobId"))
        // Every gateway lists both and shows them pending from the bucket.
        try await eventually("g1 lists both starts") {
            guard case .array(let starts)? = (try? g1.request("GET", "/v1/channels/k1/starts").json)?[member: "starts"] else { return false }
            return starts.count == 2
        }
        let shown = try g1.request("GET", "/v1/personal/\(kept)").json
        #expect(shown?.string("status") == "pending" && shown?[member: "startAt"] == .integer(at), "\(String(describing: shown))")
        let cancel = try g1.request("DELETE", "/v1/channels/k1/starts/\(cancelled)")
        #expect(cancel.status == 200 && cancel.json?.string("status") == "cancelled", "\(cancel.text)")
        let again = try g2.request("DELETE", "/v1/channels/k1/starts/\(cancelled)")
        #expect(again.status == 409 && again.errorCode == "start_not_waiting", "\(again.text)")
        #expect(try g2.request("GET", "/v1/channels/k1/starts").json?[member: "starts"] == [
            ["jobId": .string(kept), "at": .integer(at), "audience": ["follows": "team:ARS"]],
        ])
        // The gateway that accepted both leaves before their time: the other starts the kept one.
        await gateways[1].shutDown(removingData: false)
        let progress = try await GatewayDeadLetterTests.finished(kept, on: g1)
        #expect(progress?.integer("targeted") == 40 && progress?.integer("sent") == 40, "\(String(describing: progress))")
        let sends = apns.mock.recordedRequests().filter { $0.endpoint == .device }
        #expect(Set(sends.compactMap(\.deviceToken)) == Set(fans) && sends.count == 40, "each fan once, the cancelled start never")
        #expect(sends.allSatisfy { $0.receivedAt >= UnixTime(seconds: at) }, "none before its time")
        #expect(sends.allSatisfy { (try? JSONParser.parse($0.body))?[member: "aps"]?.string("input-push-channel") == apnsID })
        #expect(sends.allSatisfy { ((try? JSONParser.parse($0.body))?[member: "aps"]?.integer("timestamp") ?? 0) >= at }, "stamped when sent")
        // Started, the kickoff is the channel's audience for its rollovers.
        try await eventually("the started kickoff kept by the channel") {
            (try? g1.request("GET", "/v1/channels/k1").json?[member: "rollover"]?[member: "audiences"]) == ["team:ARS"]
        }
        let withdrawn = try g1.request("GET", "/v1/personal/\(cancelled)").json
        #expect(withdrawn?.string("status") == "cancelled" && withdrawn?.integer("sent") == 0, "\(String(describing: withdrawn))")
        #expect(try g1.request("GET", "/v1/channels/k1/starts").json?[member: "starts"] == [])
    }
}

/// One write of the job bucket's slice keys: a slice's saved progress, or its deletion (nil).
struct SliceSave: Sendable {
    static let subjects = "$KV.touchline_jobs.slice.>"

    let key: SharedJobPlan.SliceKey
    let entry: SliceEntry?
    /// When the test's watch received it: a moment after the bucket stored it.
    let observedAt: UnixTime
    /// The bucket's revision of it.
    let revision: UInt64

    init?(_ message: NATSMessage, observedAt: UnixTime = UnixTime(nanoseconds: Int64(Date().timeIntervalSince1970 * 1e9))) {
        self.observedAt = observedAt
        revision = message.stream?.sequence ?? 0
        let parts = message.subject.split(separator: ".").suffix(3)
        let deleted = message.headers["KV-Operation"] != nil
        let entry = deleted ? nil : try? JSONDecoder().decode(SliceEntry.self, from: Data(message.payload))
        guard parts.count == 3, let index = Int(parts[parts.startIndex + 1]), let count = Int(parts[parts.startIndex + 2]),
              let slice = AudienceSlice(index: index, count: count),
              deleted || entry != nil else { return nil }
        key = SharedJobPlan.SliceKey(jobID: String(parts[parts.startIndex]), slice: slice)
        self.entry = entry
    }
}

/// Every write of the job bucket's slice keys from its start on, in the bucket's order, through
/// a subscription of the test's own opened before the job: a killed gateway's last save of each
/// slice is what it had saved when it died, however late the test looks. (A read of the bucket
/// after the kill races the survivors, which save the slices they take over as soon as the
/// killed gateway's leases run out.)
final class SliceSaves: Sendable {
    private let loop: EventLoop
    private let jetStream: any JetStreamClient
    private let log: SaveLog
    private let subscription: any MessageSubscription

    private final class SaveLog: Sendable {
        let saves = Mutex<[SliceSave]>([])
    }

    init(in cluster: ClusterUnderTest) throws {
        loop = EventLoop.start(name: "bucket-watch")
        jetStream = try cluster.connect(name: "bucket-watch", loop: loop)
        let log = SaveLog()
        self.log = log
        subscription = try jetStream.subscribeOrdered(to: SliceSave.subjects, from: .all, loop: loop) { message in
            if let save = SliceSave(message) { log.saves.withLock { $0.append(save) } }
        }
    }

    deinit {
        subscription.cancel()
        jetStream.messaging.close()
        loop.stop()
    }

    /// The last save `instance` made of each slice of job `jobID` it saved.
    func lastSaves(by instance: String, ofJob jobID: String) -> [SharedJobPlan.SliceKey: SliceEntry] {
        var last: [SharedJobPlan.SliceKey: SliceEntry] = [:]
        for save in log.saves.withLock({ $0 }) where save.key.jobID == jobID && save.entry?.instance == instance {
            last[save.key] = save.entry
        }
        return last
    }

    /// Every save of a slice of job `jobID`, in the bucket's order.
    func saves(ofJob jobID: String) -> [SliceSave] {
        log.saves.withLock { $0 }.filter { $0.key.jobID == jobID }
    }

    /// The gateways that saved each slice of job `jobID`, in the order they did (for a failure's message).
    func savers(ofJob jobID: String) -> [Int: [String]] {
        var savers: [Int: [String]] = [:]
        for save in log.saves.withLock({ $0 }) where save.key.jobID == jobID {
            guard let instance = save.entry?.instance, savers[save.key.slice.index]?.last != instance else { continue }
            savers[save.key.slice.index, default: []].append(instance)
        }
        return savers
    }
}

extension String {
    fileprivate func padded(to length: Int) -> String { String(repeating: "0", count: max(0, length - count)) + self }
}
