import APNsMock
import ChildProcesses
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
import TouchlineStore
import TouchlineTesting

/// Personal jobs through the deaths and pauses of the gateways running their slices, on a real
/// cluster. Each gateway sends to a mock APNs of its own, so every push shows its sender, and a
/// watch of the job bucket opened before the job records every slice save in the bucket's order:
/// what each gateway sent and saved is read so that no timing decides it, and these run beside
/// other tests on the three slots of their NATS servers. Long: they run as the run begins.
@Suite("A cluster job through gateways' deaths and pauses", .heavy(weight: 3, long: true))
struct ClusterJobKillTests {
    /// What happens to a gateway once the mocks have accepted a number of the job's pushes.
    enum Disruption: Sendable {
        case kill
        /// SIGSTOP for this long, then SIGCONT: it wakes believing it still runs its slices.
        case pause(Duration)
    }

    struct Blow: Sendable {
        /// Index of the gateway (g1 is never struck: the job is read through it).
        let gateway: Int
        let afterAccepted: Int
        let disruption: Disruption
    }

    /// A job of 40,000 tokens; one of three gateways is killed a third of the way through (about
    /// 5 of 16 slices move). The others take its partitions over and resume its slices from
    /// their saved checkpoints.
    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func aGatewayKilledInTheMiddleOfAJobLosesNoTargetAndResendsOnlyWhatItHadNotSaved() async throws {
        try await Self.run(audience: 40_000, blows: [Blow(gateway: 1, afterAccepted: 40_000 / 3, disruption: .kill)])
    }

    /// A job of 100,000 tokens: a quarter of the way through, one slice owner is stopped with
    /// SIGSTOP for two leases; halfway, the other is killed. g1 runs what is left; the paused
    /// gateway wakes with its leases lapsed and takes its share back.
    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func sliceOwnersPausedAndKilledMidwayLoseNoTargetAndResendOnlyWhatTheyHadNotSaved() async throws {
        try await Self.run(audience: 100_000, blows: [Blow(gateway: 1, afterAccepted: 25_000, disruption: .pause(.seconds(6))),
                                                      Blow(gateway: 2, afterAccepted: 50_000, disruption: .kill)])
    }

    /// The personal queue's in-flight limit the gateways run with (its default).
    static let maxInFlight = 1_000

    /// A slice run a gateway's log reports: when it began, and the revision of the save it
    /// resumed from (nil: from the slice's start).
    struct SliceRun {
        let at: UnixTime
        let fromRevision: UInt64?
    }

    /// The first run of each slice of `jobID` the gateway's log reports after `since`, by slice index.
    static func sliceRuns(of jobID: String, in lines: [String], after since: UnixTime) -> [Int: SliceRun] {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let prefix = "runs \(jobID) slice "
        var runs: [Int: SliceRun] = [:]
        for line in lines {
            guard let json = try? JSONParser.parse(Array(line.utf8)), let message = json.string("message"), message.hasPrefix(prefix),
                  let time = json.string("time").flatMap(format.date(from:)) else { continue }
            let at = UnixTime(nanoseconds: Int64(time.timeIntervalSince1970 * 1e9))
            guard at > since, let number = Int(message.dropFirst(prefix.count).prefix { $0.isNumber }), runs[number - 1] == nil else { continue }
            let revision = message.split(separator: "at revision ").dropFirst().first.flatMap { UInt64($0.prefix { $0.isNumber }) }
            runs[number - 1] = SliceRun(at: at, fromRevision: revision)
        }
        return runs
    }

    /// Runs a job of `audience` tokens through `blows` and checks:
    /// - sent + dead-lettered + expired = targeted = `audience`, and every token was accepted or
    ///   dead-lettered as `Unconfirmed` (sent, never answered) in its sender's file;
    /// - every token sent again went again only within docs/cluster.md's bound: the gateway that
    ///   sent it before had not saved it as sent when its slice moved (``ResendCheck``);
    /// - a paused gateway sends nothing after it wakes but in slices it took back and saved.
    static func run(audience: Int, blows: [Blow]) async throws {
        let cluster = try await NATSCluster.start()
        var mocks: [MockAPNsFixture] = []
        for _ in 0..<3 { mocks.append(try MockAPNsFixture { $0.recordingCapacity = 2 * audience + 10_000 }) }
        defer { Task { [mocks] in for mock in mocks { await mock.shutDown() }; withExtendedLifetime(cluster) {} } }
        func serve(_ index: Int) async throws -> ServeProcess {
            let name = "g\(index + 1)"
            let store = #"{"backend": "jetstream", "servers": [\#(cluster.urls.map { "\"\($0)\"" }.joined(separator: ","))], "instance": "\#(name)", "partitions": 8}"#
            return try await ServeProcess(dataDirectory: mocks[index].directory + "/\(name)",
                                          arguments: mocks[index].serveArguments + ["--store", store, "--max-body-bytes", "4194304",
                                                                                    "--personal-queue", #"{"saveIntervalMilliseconds": 20}"#, "--log-level", "info"])
        }
        let gateways = [try await serve(0), try await serve(1), try await serve(2)]
        let admins = gateways.map { $0.admin.waiting(upTo: 60) }
        // Balanced first, so that only the blows move slices while the job runs.
        try await eventually("every gateway serves its share of the 8 partitions", timeout: .seconds(60)) {
            ClusterPersonalJobTests.everyGatewayServes(admins, partitions: 8)
        }
        let fans = ClusterPersonalJobTests.tokens(audience)
        try ClusterPersonalJobTests.register(fans, through: admins[0], perRequest: 5_000)
        let saves = try SliceSaves(in: .servers(cluster))

        // The blows come from a thread of their own watching the mocks (see GatewayPersonalResumeTests).
        let servers = mocks.map(\.mock), pids = gateways.map(\.process.pid)
        let struck = DispatchSemaphore(value: 0)
        let times = Mutex<[Int: (struck: UnixTime, woken: UnixTime?)]>([:])
        let created = try admins[0].request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody)
        let jobID = try #require(created.json?.string("jobId"), "\(created.text)")
        // Midway, the job shows how many of its slices have ended: asked right before the first
        // blow, since after it the others may finish the job before any request of this task's
        // (a CI run once found it done). A loaded gateway may answer 503 for a moment: asked again then.
        let midwayAnswer = Mutex<GatewayTestClient.Response?>(nil)
        let admin = admins[0]
        Thread {
            let deadline = ContinuousClock.now + .seconds(180)
            let now = { UnixTime(nanoseconds: Int64(Date().timeIntervalSince1970 * 1e9)) }
            for (index, blow) in blows.enumerated() {
                while servers.reduce(0, { $0 + $1.counters().count(endpoint: .device, status: 200) }) < blow.afterAccepted,
                      ContinuousClock.now < deadline { usleep(1_000) }
                if index == 0 {
                    var answer = try? admin.request("GET", "/v1/personal/\(jobID)")
                    for _ in 0..<20 where answer?.status == 503 {
                        usleep(250_000)
                        answer = try? admin.request("GET", "/v1/personal/\(jobID)")
                    }
                    midwayAnswer.withLock { $0 = answer }
                }
                switch blow.disruption {
                case .kill:
                    kill(pids[blow.gateway], SIGKILL)
                    times.withLock { $0[blow.gateway] = (now(), nil) }
                case .pause(let duration):
                    kill(pids[blow.gateway], SIGSTOP)
                    let at = now()
                    usleep(UInt32(duration.inNanoseconds / 1_000))
                    kill(pids[blow.gateway], SIGCONT)
                    times.withLock { $0[blow.gateway] = (at, now()) }
                }
            }
            struck.signal()
        }.start()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { struck.wait(); done.resume() }
        }
        for blow in blows { if case .kill = blow.disruption { gateways[blow.gateway].process.wait() } }
        let struckAt = times.withLock { $0 }
        try #require(struckAt.count == blows.count)
        func accepted() -> [(gateway: Int, request: MockAPNsRecordedRequest)] {
            servers.enumerated().flatMap { index, server in
                server.recordedRequests().filter { $0.endpoint == .device && $0.status == 200 }.map { (index, $0) }
            }
        }
        let firstBlow = try #require(struckAt.values.map(\.struck).min())
        #expect(accepted().count { $0.request.receivedAt <= firstBlow } < audience, "the blows came in the middle of the fan-out")
        for blow in blows {
            #expect(saves.lastSaves(by: "g\(blow.gateway + 1)", ofJob: jobID).contains { !$0.value.isFinished },
                    "g\(blow.gateway + 1) was running slices when struck: \(saves.savers(ofJob: jobID))")
        }
        let midway = try #require(midwayAnswer.withLock { $0 }, "the job could not be read before the first blow")
        let slices = midway.json?[member: "slices"]
        #expect(slices?[member: "total"] == .integer(16) && (slices?.integer("finished") ?? 16) < 16, "\(midway.status) \(midway.text)")

        var progress: JSONValue?
        do {
            try await eventually("the job to finish", timeout: .seconds(180)) {
                progress = try? admins[0].request("GET", "/v1/personal/\(jobID)").json
                return progress?.string("status") == "done"
            }
        } catch {
            let slices = try await ClusterPersonalJobTests.savedSlices(in: .servers(cluster)).filter { $0.key.jobID == jobID }
            Issue.record("""
                \(String(describing: progress)); slices: \(slices.sorted { $0.key < $1.key }.map { "\($0.key.slice.index):\($0.value.instance):\($0.value.isFinished):\($0.value.checkpoint.counters.sent)" })
                g1: \(gateways[0].logLines.suffix(30).joined(separator: "\n"))
                """)
            throw error
        }
        let targeted = progress?.integer("targeted") ?? -1, sent = progress?.integer("sent") ?? -1
        let expired = progress?.integer("expired") ?? -1
        var failed: Int64 = 0
        if case .object(let reasons)? = progress?[member: "failed"] {
            for reason in reasons { if case .integer(let count) = reason.value { failed += count } }
        }
        #expect(targeted == Int64(audience) && sent + failed + expired == targeted && progress?.integer("pending") == 0,
                "\(String(describing: progress))")
        // A push-to-start that went out and got no answer (the response timeout, a connection
        // lost) is dead-lettered as `Unconfirmed`, never sent again: it may have started the
        // device. On a machine this busy (three gateways, three servers and three mocks beside
        // other tests) a few do; nothing else may fail.
        var unconfirmed: Int64 = 0
        if case .object(let reasons)? = progress?[member: "failed"] {
            for reason in reasons {
                guard case .integer(let count) = reason.value else { continue }
                if reason.name == PersonalDeliveryPolicy.unconfirmedReason { unconfirmed = count } else {
                    Issue.record("\(count) targets failed with \(reason.name)")
                }
            }
        }
        #expect(unconfirmed <= Int64(Self.maxInFlight * gateways.count), "more unanswered than the gateways had in flight: \(unconfirmed)")

        let acceptedAtEnd = accepted()
        var seen: [String: Int] = [:]
        for token in acceptedAtEnd.compactMap(\.request.deviceToken) { seen[token, default: 0] += 1 }
        let jobSaves = saves.saves(ofJob: jobID)
        // Every token no mock accepted is a dead letter of the job, in the file of the gateway
        // that sent it, so an operator can see it and replay it.
        var deadLettered: Set<String> = []
        for (index, mock) in mocks.enumerated() {
            let reader = try SQLiteTokenReader(path: mock.directory + "/g\(index + 1)/personal.sqlite")
            defer { reader.close() }
            deadLettered.formUnion(try reader.deadLetters(jobID: jobID, reason: PersonalDeliveryPolicy.unconfirmedReason, after: 0, limit: 10_000)
                .map(\.token))
        }
        let missing = Set(fans).subtracting(seen.keys).subtracting(deadLettered)
        print("cluster job: \(unconfirmed) sends unanswered and dead-lettered, \(deadLettered.count) dead letters stored")
        if let token = missing.min() {
            let history = jobSaves.filter { $0.key.slice.contains(token) }.map { save in
                "\(save.entry?.instance ?? "-") r\(save.revision): \(save.entry.map { "cursor \($0.checkpoint.cursor?.prefix(12) ?? "start"), sent \($0.checkpoint.counters.sent), finished \($0.isFinished), covers it \(ResendCheck.holds(token, $0.checkpoint))" } ?? "removed")"
            }
            let slices = Set(missing.compactMap { token in AudienceSlice.all(count: 16).first { $0.contains(token) }?.index })
            Issue.record("""
                \(missing.count) tokens neither accepted nor dead-lettered, in slices \(slices.sorted()); the job: \(String(describing: progress))
                the first, \(token.prefix(12))…: its slice's saves: \(history.joined(separator: "\n"))
                any mock's answers to it: \(servers.flatMap { $0.recordedRequests().filter { $0.deviceToken == token }.map(\.status) })
                sends without an answer, by gateway: \(gateways.map { gateway in
                    ((try? gateway.admin.request("GET", "/metrics").text) ?? "").split(separator: "\n")
                        .filter { $0.hasPrefix("touchline_apns_responses_total") && $0.contains("status=\"none\"") }.joined(separator: ", ")
                })
                """)
        }
        #expect(missing.isEmpty && Set(seen.keys).isSubset(of: Set(fans)), "\(seen.count) distinct tokens accepted, \(deadLettered.count) dead-lettered")
        let twice = seen.filter { $0.value > 1 }

        // A paused gateway's requests written before the pause reach the mock after it wakes
        // (their frames waited in its buffers and the sockets', behind a busy mock), sometimes
        // after it runs their slice again. Its log says from which save each run after waking
        // started: what it sends of a slice it has not run again, or of tokens that run's save
        // had settled (the run does not send them), it sent before the pause.
        let pauses = struckAt.compactMap { index, times in times.woken.map { (index, times.struck, $0) } }
        var runsAfterWaking: [Int: [Int: SliceRun]] = [:]
        for (index, _, woken) in pauses { runsAfterWaking[index] = Self.sliceRuns(of: jobID, in: gateways[index].logLines, after: woken) }
        func sentAt(_ sent: (gateway: Int, request: MockAPNsRecordedRequest)) -> UnixTime {
            let token = sent.request.deviceToken ?? ""
            guard let (_, struck, woken) = pauses.first(where: { $0.0 == sent.gateway }), sent.request.receivedAt > struck else { return sent.request.receivedAt }
            // Stopped, it wrote nothing: what arrived meanwhile had been written before.
            guard sent.request.receivedAt > woken else { return struck }
            guard let slice = AudienceSlice.all(count: 16).first(where: { $0.contains(token) }) else { return sent.request.receivedAt }
            guard let run = runsAfterWaking[sent.gateway]?[slice.index], sent.request.receivedAt >= run.at else { return struck }
            guard let revision = run.fromRevision else { return sent.request.receivedAt }
            let from = jobSaves.first { $0.revision == revision }?.entry?.checkpoint
            return from.map { ResendCheck.holds(token, $0) } == true ? struck : sent.request.receivedAt
        }
        let check = ResendCheck(sends: acceptedAtEnd.map { ResendCheck.Send(gateway: "g\($0.gateway + 1)", token: $0.request.deviceToken ?? "", at: sentAt($0)) },
                                saves: jobSaves)
        // What the mock shows cannot order a woken gateway's late arrivals against its own next
        // run or the others' sends exactly: a pair with one of them is counted against its
        // in-flight limit; every other pair must keep the bound.
        func arrivedLateFromAPause(_ send: ResendCheck.Send) -> Bool {
            pauses.contains { "g\($0.0 + 1)" == send.gateway && send.at > $0.2 && send.at < $0.2 + .seconds(2) }
        }
        let lateFromAPause = check.unjustified.filter { arrivedLateFromAPause($0.first) || arrivedLateFromAPause($0.again) }
        let unjustified = check.unjustified.filter { !arrivedLateFromAPause($0.first) && !arrivedLateFromAPause($0.again) }
        #expect(lateFromAPause.count <= Self.maxInFlight * pauses.count,
                "\(lateFromAPause.count) tokens went twice around a woken gateway's late arrivals, more than it had in flight")
        if let (first, again) = unjustified.first {
            // The first one's story: the blows, and every save of its slice with who made it.
            let history = jobSaves.filter { $0.key.slice.contains(first.token) }.map { save in
                "\(save.entry?.instance ?? "-") r\(save.revision) at \(save.observedAt.nanoseconds % 100_000_000_000): \(save.entry.map { "cursor \($0.checkpoint.cursor?.prefix(12) ?? "start"), sent \($0.checkpoint.counters.sent), finished \($0.isFinished), covers it \(ResendCheck.holds(first.token, $0.checkpoint))" } ?? "removed")"
            }
            Issue.record("""
                \(unjustified.count) sends went again after their sender had saved them as sent; the first: \(first), again \(again)
                blows: \(struckAt.sorted { $0.key < $1.key }.map { "g\($0.key + 1) struck \($0.value.struck.nanoseconds), woken \($0.value.woken?.nanoseconds ?? 0)" })
                its sends: \(acceptedAtEnd.filter { $0.request.deviceToken == first.token }.map { "g\($0.gateway + 1) at \($0.request.receivedAt.nanoseconds % 100_000_000_000)" })
                where they were on the wire: \(Self.wireOrder(of: first.token, in: servers).joined(separator: "\n"))
                its slice's saves: \(history.joined(separator: "\n"))
                \(again.gateway)'s log: \(gateways[Int(again.gateway.dropFirst())! - 1].logLines.suffix(80).joined(separator: "\n"))
                """)
        }
        // A woken gateway's queued sends were withheld: what reaches APNs from it after it wakes,
        // but before it runs a slice again, is what it had written before the pause, at most
        // its in-flight limit.
        for (index, _, woken) in pauses {
            let name = "g\(index + 1)"
            let stray = acceptedAtEnd.filter { $0.gateway == index && $0.request.receivedAt > woken && sentAt($0) < woken }
            print("\(name) woke with \(stray.count) pushes it had written before the pause still on their way")
            #expect(stray.count <= Self.maxInFlight, "\(name) (woken at \(woken.nanoseconds)) sent \(stray.count) pushes after waking in slices it had not run again, more than its \(Self.maxInFlight) in flight")
        }
        print("cluster job: \(audience) tokens, \(blows.count) blows, \(twice.count) tokens sent twice (\(lateFromAPause.count) around a woken gateway's late arrivals, \(unjustified.count) after their sender had saved them); slices saved by: \(saves.savers(ofJob: jobID).sorted { $0.key < $1.key }.map { "\($0.key):\($0.value.joined(separator: ">"))" }.joined(separator: " "))")
        for (index, gateway) in gateways.enumerated() where !blows.contains(where: { if case .kill = $0.disruption { $0.gateway == index } else { false } }) {
            #expect(gateway.terminate() == 0)
        }
    }
}

extension ClusterJobKillTests {
    /// Where each push of `token` was among its connection's streams, for telling a push that
    /// left late (its neighbours by stream id arrived long before it: it was written after them,
    /// so after its slice may have stopped) from one that left in time and arrived late (its
    /// neighbours arrived around it). HEADERS frames leave in stream id order, and the fence is
    /// checked as each leaves; the id names the fence the push was made under.
    static func wireOrder(of token: String, in servers: [MockAPNsServer]) -> [String] {
        servers.enumerated().flatMap { index, server -> [String] in
            let recorded = server.recordedRequests()
            return recorded.filter { $0.deviceToken == token }.map { push in
                let neighbours = recorded.filter { $0.connection == push.connection && abs($0.streamID - push.streamID) <= 6 && $0.streamID != push.streamID }
                    .sorted { $0.streamID < $1.streamID }
                    .map { "stream \($0.streamID) at \($0.receivedAt.nanoseconds % 100_000_000_000)" }
                let stamp = push.headers.first { $0.name == "apns-id" }.flatMap { FenceStamp(uuid: $0.value) }
                return "mock \(index + 1) connection \(push.connection) stream \(push.streamID) at \(push.receivedAt.nanoseconds % 100_000_000_000), \(stamp.map(String.init(describing:)) ?? "no stamp"); neighbours: \(neighbours.joined(separator: ", "))"
            }
        }
    }
}

/// docs/cluster.md's bound on tokens sent twice, checked send by send: a token sent again went
/// again only if the gateway that sent it before had not saved it as sent (its slice's cursor
/// past it, or among the tokens ended after the cursor) before another gateway saved that slice,
/// or before the token went again.
/// A save observed after a send may have been made a moment before it; such a save does not
/// hold the token yet, so the rule never calls a send justified that was not.
struct ResendCheck {
    struct Send: Sendable, CustomStringConvertible {
        let gateway: String
        let token: String
        let at: UnixTime
        var description: String { "\(gateway) \(token.prefix(12))… at \(at.nanoseconds)" }
    }

    /// Pairs of sends of one token where the first sender had saved it before its slice moved.
    let unjustified: [(first: Send, again: Send)]

    init(sends: [Send], saves: [SliceSave]) {
        let byToken = Dictionary(grouping: sends, by: \.token).filter { $0.value.count > 1 }
        var unjustified: [(Send, Send)] = []
        for (token, tokenSends) in byToken {
            let ordered = tokenSends.sorted { $0.at < $1.at }
            let sliceSaves = saves.filter { $0.key.slice.contains(token) }
            for (first, again) in zip(ordered, ordered.dropFirst()) {
                // The first sender's saves of the slice after its send, up to another gateway's
                // and up to the send again: when one gateway sends a token twice, a save of its
                // after the second send (a run from an older save) says nothing of the first.
                let after = sliceSaves.drop { $0.observedAt < first.at }
                let own = after.prefix { $0.entry?.instance == first.gateway && $0.observedAt < again.at }
                if own.contains(where: { $0.entry.map { Self.holds(token, $0.checkpoint) } ?? false }) { unjustified.append((first, again)) }
            }
        }
        self.unjustified = unjustified
    }

    /// Whether a checkpoint counts `token` as settled.
    static func holds(_ token: String, _ checkpoint: FanOutCheckpoint) -> Bool {
        guard !checkpoint.pending.contains(where: { $0.token == token }) else { return false }
        return checkpoint.cursor.map { token <= $0 } == true || checkpoint.endedAfterCursor.contains(token)
    }
}
