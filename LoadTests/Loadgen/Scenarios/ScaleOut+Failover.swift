import Foundation
import LoadKit
import Measurements
import NATSServers
import TouchlineCore

/// scale-out's failover phase: a pair of gateways of its own on the same NATS cluster (a prefix
/// of its own, snapshots as a production cluster takes them, the lease TTL under test), whose
/// second is killed (SIGKILL) or stopped (SIGSTOP) in turn, `kills` and `pauses` times.
///
/// Each round:
/// 1. one event to each channel of the second gateway's partitions, through it (acknowledged by
///    the gateway about to fail: they must not be lost);
/// 2. the fault, after a drawn wait of up to a renew interval (a third of the TTL): the rounds
///    follow each other at fixed intervals, so without it every fault would come at the same
///    point of the victim's renewal cycle and the rounds would measure one case forty times;
///    then events to each of those channels through the first gateway,
///    from `connections` threads, each channel's sent again every 20 ms until acknowledged.
///    Their patch carries `faultAt` as `sentAt`, so the mock's ingest→APNs latency of a push
///    of them is the time from the fault to that push: the round's failover is the largest,
///    the time until every moved channel's first push;
/// 3. the second gateway started again (after a kill) or resumed (after a pause: it wakes
///    believing it owns its partitions, and its fences must drop what it still sends), and the
///    partitions shared out again.
///
/// After each round the moved channels' states are read back: the round's last acknowledged
/// event of each kind must be in them.
extension ScaleOut {
    enum Fault: String {
        case kill
        case pause
    }

    struct FailoverRound {
        var fault: Fault
        var movedChannels: Int
        /// From the fault to every moved channel's first push at the mock.
        var firstPushMilliseconds: Double
        /// From the fault to the last moved channel's first acknowledgement.
        var acknowledgedMilliseconds: Double
    }

    struct FailoverOutcome {
        var rounds: [FailoverRound]
        /// Acknowledged events missing from their channel's state at the end.
        var lost: Int
        /// Acknowledged events checked.
        var checked: Int

        func summary(of fault: Fault?, _ figure: KeyPath<FailoverRound, Double>) -> LatencySummary {
            LatencyHistogram(milliseconds: rounds.filter { fault == nil || $0.fault == fault }.map { $0[keyPath: figure] }).summary
        }
    }

    /// The faults in the order they are dealt: kills and pauses alternate while both are left.
    static func faults(kills: Int, pauses: Int) -> [Fault] {
        (0..<max(kills, pauses)).flatMap { round in (round < kills ? [Fault.kill] : []) + (round < pauses ? [.pause] : []) }
    }

    func failoverRounds(stage: LoadStage, cluster: NATSCluster, log: ScenarioLog) throws -> FailoverOutcome {
        let arguments = { (instance: String) in ["--store", self.failoverStoreSettings(cluster, instance: instance)] }
        let survivor = try stage.startAnotherGateway(extraArguments: arguments("f1"))
        let victimIndex = stage.otherGateways.count
        var victim = try stage.startAnotherGateway(extraArguments: arguments("f2"))
        try waitUntilBothServe([survivor, victim])
        let channels = (0..<min(options.channels, Self.pacedChannels)).map { String(format: "failover-%05d", $0) }
        try ChannelCreation.create(channels, policy: ChannelCreation.unthrottledPolicy, connect: survivor.connector)
        let partitioning = ChannelPartitioning(count: options.partitions)!
        var rounds: [FailoverRound] = []
        var lost = 0, checked = 0
        var random = SeededRandom(seed: 34)
        for (number, fault) in Self.faults(kills: options.kills, pauses: options.pauses).enumerated() {
            let served = try victim.servedPartitions(.leases)
            let moved = channels.filter { served.contains(partitioning.partition(of: $0)) }
            guard !moved.isEmpty else { throw LoadError("failover round \(number + 1): the second gateway serves none of the \(channels.count) channels") }
            var acknowledged = AcknowledgedEvents(firstSeq: number * 10_000_000)
            try acknowledged.send(moved, kind: "before", through: victim.connector, sentAt: unixNanoseconds())

            let phase = try PhaseMeasurement(stage: stage)
            Thread.sleep(forTimeInterval: random.uniform(0, Double(options.leaseTTLMilliseconds) / 3_000))
            let faultAt = unixNanoseconds(), faultedAt = monotonicNanoseconds()
            switch fault {
            case .kill: stage.killAnotherGateway(victimIndex)
            case .pause: stage.pauseAnotherGateway(victimIndex)
            }
            let acknowledgedAt = try acknowledged.sendUntilAcknowledged(moved, kind: "clock", through: survivor.connector, sentAt: faultAt,
                                                                        threads: min(moved.count, 16))
            // Every moved channel's push, however late: the mock's reports are taken until
            // they hold one per channel (10 s at most).
            var latencies = try phase.finish().arrivals.latency(endpoint: "broadcast")
            let deadline = monotonicNanoseconds() + 10_000_000_000
            while latencies.summary.count < moved.count && monotonicNanoseconds() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
                latencies.merge(try stage.mock.takeArrivalReport().latency(endpoint: "broadcast"))
            }
            let pushes = latencies.summary
            guard pushes.count >= moved.count else {
                throw LoadError("failover round \(number + 1): \(pushes.count) pushes at the mock for \(moved.count) moved channels 10 s after the last was acknowledged")
            }
            let round = FailoverRound(fault: fault, movedChannels: moved.count, firstPushMilliseconds: pushes.max,
                                      acknowledgedMilliseconds: Double(acknowledgedAt - faultedAt) / 1e6)
            rounds.append(round)
            log.say(String(format: "%@ %d: the %d channels of the second gateway's partitions pushed again %.0f ms after it (acknowledged after %.0f ms)",
                           fault.rawValue, number + 1, moved.count, round.firstPushMilliseconds, round.acknowledgedMilliseconds))
            switch fault {
            case .kill: victim = try stage.restartAnotherGateway(victimIndex, extraArguments: arguments("f2"))
            case .pause: stage.resumeAnotherGateway(victimIndex)
            }
            try waitUntilBothServe([survivor, victim])
            let missing = try acknowledged.missing(through: survivor.connect())
            lost += missing.lost
            checked += missing.checked
        }
        return FailoverOutcome(rounds: rounds, lost: lost, checked: checked)
    }

    /// The failover pair's store: a prefix of its own, the standard snapshot size, the lease TTL
    /// under test (the other durations in their standard proportions).
    private func failoverStoreSettings(_ cluster: NATSCluster, instance: String) -> String {
        let servers = cluster.urls.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"backend":"jetstream","servers":[\#(servers)],"instance":"\#(instance)","prefix":"failover","partitions":\#(options.partitions),"replicas":\#(options.replicas),"leases":{"ttlMilliseconds":\#(options.leaseTTLMilliseconds)}}"#
    }
}

/// The last acknowledged event of each channel, by kind: each kind sets a field of its own in
/// the channel's state (`before`: sent to the gateway about to fail; `clock`: sent after the
/// fault), so the last of each must be found in the state at the end.
struct AcknowledgedEvents {
    private var lastSeq: Int
    /// Per channel and field, the seq of its last acknowledged event (the field's value).
    private(set) var last: [String: [String: Int]] = [:]

    /// Seqs above `firstSeq` (above those of every earlier round).
    init(firstSeq: Int) { lastSeq = firstSeq }

    /// One event per channel through `connect`'s gateway, in turn; the acknowledged are kept.
    mutating func send(_ channels: [String], kind: String, through connect: @Sendable () throws -> HTTPLoadClient, sentAt: Int64) throws {
        let client = try connect()
        for id in channels {
            lastSeq += 1
            let answer = try client.send("POST", "/v1/channels/\(id)/events", body: Self.event(seq: lastSeq, kind: kind, sentAt: sentAt))
            if answer.status == 202 { last[id, default: [:]][kind] = lastSeq }
        }
    }

    /// Events to each channel from `threads` threads (each with its channels and a connection of
    /// its own), each channel's sent again every 20 ms until one is acknowledged; the
    /// monotonic time of the last first acknowledgement.
    mutating func sendUntilAcknowledged(_ channels: [String], kind: String, through connect: @escaping @Sendable () throws -> HTTPLoadClient,
                                        sentAt: Int64, threads: Int) throws -> Int64 {
        let firstSeq = lastSeq
        let attempts = 100_000
        let results = try onThreads(threads) { thread -> [(String, Int, Int64)] in
            var client = try connect()
            var pending = stride(from: thread, to: channels.count, by: threads).map { channels[$0] }
            var done: [(String, Int, Int64)] = []
            // Each thread's seqs are its own range above `firstSeq`, rising.
            var seq = firstSeq + thread * attempts
            let deadline = monotonicNanoseconds() + 60_000_000_000
            while !pending.isEmpty {
                guard monotonicNanoseconds() < deadline else { throw LoadError("\(pending.count) moved channels not acknowledged 60 s after the fault") }
                for id in pending {
                    seq += 1
                    let answer: HTTPLoadClient.Response
                    do {
                        answer = try client.send("POST", "/v1/channels/\(id)/events", body: Self.event(seq: seq, kind: kind, sentAt: sentAt))
                    } catch {
                        client = try connect()
                        continue
                    }
                    if answer.status == 202 {
                        done.append((id, seq, monotonicNanoseconds()))
                        pending.removeAll { $0 == id }
                    }
                }
                if !pending.isEmpty { Thread.sleep(forTimeInterval: 0.02) }
            }
            return done
        }
        var latest: Int64 = 0
        for (id, seq, at) in results.joined() {
            last[id, default: [:]][kind] = seq
            latest = max(latest, at)
        }
        lastSeq = firstSeq + threads * attempts
        return latest
    }

    /// Acknowledged events whose field does not hold their seq in their channel's state, and how
    /// many were checked.
    func missing(through client: HTTPLoadClient) throws -> (lost: Int, checked: Int) {
        var lost = 0, checked = 0
        for (id, fields) in last {
            let answer = try sendRetryingWhileMoving(client, "GET", "/v1/channels/\(id)")
            let state = answer.status == 200 ? (try? JSONParser.parse(answer.body))?[member: "contentState"] : nil
            for (field, seq) in fields {
                checked += 1
                guard case .integer(let found)? = state?[member: field], found == Int64(seq) else {
                    lost += 1
                    continue
                }
            }
        }
        return (lost, checked)
    }

    private static func event(seq: Int, kind: String, sentAt: Int64) -> [UInt8] {
        Array(#"{"seq":\#(seq),"patch":{"\#(kind)":\#(seq),"sentAt":\#(sentAt)}}"#.utf8)
    }
}
