import ClusterSimulations
import NATS
import Synchronization
import TouchlineCore
import TouchlineJetStream
import TouchlineTesting

/// Gateways on a cluster in virtual time, one seed one run: two to four gateways share the
/// partitions of a few channels through ``LeaseSimulation`` (their real ``PartitionLeases``
/// machines around a simulated lease bucket), write their partitions' logs, push to APNs and
/// run the slices of a personal job, while the network loses, delays, holds and repeats their
/// messages, and the gateways are paused, cut off from the cluster, killed and restarted, each on
/// a clock of its own rate.
///
/// **What is real.** The lease machines; each gateway's ``PartitionFences``, written from its
/// machine's holds after every input as the lease keeper writes them, and asked before every
/// side effect as the shell asks it; the logs and the checkpoint stream are the in-memory
/// cluster's ``InMemoryStream``s (compare-and-set on the stream's and a subject's last sequence,
/// message-id deduplication), the rules held to the same contract tests as nats-server.
///
/// **What is modelled**, after the shell (`JetStreamChannelStore`, `ChannelService`,
/// `SharedJobs`), in a few lines each: a takeover reads the log to its end and writes a takeover
/// record after it by compare-and-set before serving (read again when that fails); one write per
/// log in flight, expecting the last sequence the gateway read, retried with its message id for
/// 10 s after an unanswered attempt, each attempt sent only while its fence holds, a refused
/// retry settled by reading the message at the sequence it expected; a push decided under the
/// partition's fence, queued in order per gateway, checked at its socket write, and decided again
/// under a fence that holds when withheld; a slice of a personal job run from the last save it
/// read, each save fenced and stored only over the save it ran from. The servers answer as
/// current ones do (the expected sequence checked before the message id) or, per seed, as 2.11
/// did (the id first): the write protocol must not depend on which.
///
/// **Checked** after every side effect and at the end, after the faults stop and the cluster
/// settles: every acknowledged event is in its log; nothing written under a fence is stored
/// after a later fence's takeover record; at APNs no channel's state goes back in time and no
/// partition's push comes under an older fence than one before it (nothing a deposed owner sends
/// reaches APNs once another took over); no state is pushed twice under one fence; every
/// channel's last stored state is its last push; checkpoints only move forward; every token of
/// every slice reaches APNs. The lease simulation's own invariants (never two fences of a
/// partition at one instant) hold too.
///
/// **Faults**: messages lost, delayed, held in a cut link for seconds and delivered in order when
/// it is mended, publishes repeated; pushes held before their socket write; gateways paused (the
/// clock runs on; on waking, what reached their sockets is handled before the timers that
/// expired), cut off from the cluster, killed and restarted, with links cut as an owner takes a
/// quiet partition's last event; providers that wait 1 to 10 s for an answer and send again.
///
/// **Not modelled**: the channel engines' pacing and budgets, snapshots, the token registry, the
/// NATS client's own reconnects (a message is lost or held, not retransmitted), and the time
/// bytes take from a socket to APNs (a push arrives as it is written). The lease layer is
/// ``LeaseSimulation``'s: its bucket takes per-key compare-and-set (a guarantee the servers give
/// a key-value bucket), where the keeper writes by compare-and-set on the bucket stream's last
/// sequence; its watch, like the keeper's, notices a lost report at the next and watches anew.
/// The keeper's own protocol is held by `PartitionLeaseKeeperTests` on both backends.
struct ClusterSimulation {
    struct Faults {
        /// Delay of each data-plane message (uniform).
        var delay: ClosedRange<Duration> = .milliseconds(1) ... .milliseconds(20)
        /// The chance that a request or an answer is lost.
        var dropRate = 0.0
        /// The chance that a publish waits in the link (a reconnect buffer) for up to `linkHold`.
        var linkHoldRate = 0.0
        var linkHold = Duration.seconds(6)
        /// The chance that a publish reaches the servers twice (a retry the client made on its own).
        var duplicateRate = 0.0
        /// The chance that a push waits before its socket write (a token-renewal hold, the pool's
        /// queue, a retry after GOAWAY) for up to `pushHold`.
        var pushHoldRate = 0.0
        var pushHold = Duration.seconds(5)
        /// How long a provider waits for an answer before sending the event again.
        var clientTimeout = Duration.seconds(1)
        /// The chance that the gateway taking a channel's last event has its link cut (``cutLink``).
        var aimedCutRate = 0.0
        /// Pauses, cuts, isolations and kills every 1 to 4 s (``run(chaos:settle:)``).
        var scheduled = true
        /// The chance that a cut link's gateway is stopped too, 0.3 s after the cut.
        var pauseWithCutRate = 0.5
        /// The chance that a partition's matches all end together while the faults go on.
        var quietPartitionRate = 0.5
        /// Clock rates drawn from 1 ± this.
        var maximumDrift = 0.0
        /// The servers check the message id before the expected last sequence (2.11).
        var idCheckedFirst = false
    }

    /// Fences taken out, for the negative controls: each must be caught.
    struct Removed: OptionSet {
        let rawValue: Int
        /// Pushes are not checked at their socket write.
        static let pushFence = Removed(rawValue: 1)
        /// A new owner serves without writing a takeover record.
        static let takeoverRecord = Removed(rawValue: 2)
        /// A save is stored over whatever save is there.
        static let checkpointCompareAndSet = Removed(rawValue: 4)
    }

    struct Statistics {
        var acknowledged = 0
        var pushes = 0
        var withheld = 0
        var takeovers = 0
        var refusedWrites = 0
        var tokensSentTwice = 0
        var pauses = 0
        var kills = 0
        var isolations = 0
        var cutLinks = 0
        /// Events a gateway acknowledged after another had taken their partition over (stored
        /// before its takeover record, so the new owner read them).
        var acknowledgedByADeposedOwner = 0

        /// Adds another run's counts to these.
        mutating func add(_ other: Statistics) {
            acknowledged += other.acknowledged
            pushes += other.pushes
            withheld += other.withheld
            takeovers += other.takeovers
            refusedWrites += other.refusedWrites
            tokensSentTwice += other.tokensSentTwice
            pauses += other.pauses
            kills += other.kills
            isolations += other.isolations
            cutLinks += other.cutLinks
            acknowledgedByADeposedOwner += other.acknowledgedByADeposedOwner
        }
    }

    static let answerTimeout = Duration.milliseconds(500)
    static let retryLimit = Duration.seconds(10)
    static let takeoverAttempts = 20
    static let saveEvery = 20

    private(set) var leases: LeaseSimulation
    let faults: Faults
    let removed: Removed
    let partitionCount: Int
    let tokensPerSlice: Int
    private var random: SplitMix64
    private var events = EventQueue<Event>()
    private let clock = VirtualTime()
    private var gateways: [Gateway] = []
    private var clients: [Client]
    private var logs: [InMemoryStream]
    private var saves = InMemoryStream(JetStream.StreamSettings(name: "SLICES", subjects: ["slices.>"]))
    private var apns: APNsRecord
    private(set) var statistics = Statistics()
    /// Broken invariants, the first few.
    private(set) var failures: [String] = []
    /// When the faults stop.
    private var chaosEnd: Int64 = .max
    /// Per partition, the highest fence it was served under.
    private lazy var servedFence = Array(repeating: Fence(Revision(0)), count: partitionCount)

    init(gateways count: Int, partitions: Int, channels: Int, tokensPerSlice: Int, faults: Faults, removed: Removed = [], seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let settings = try LeaseSettings(partitionCount: partitions)
        leases = LeaseSimulation(settings: settings, faults: LeaseSimulation.Faults(delay: faults.delay, dropRate: faults.dropRate,
                                                                                     maximumDrift: faults.maximumDrift), seed: random.next())
        leases.recordsOwnership = true
        self.faults = faults
        self.removed = removed
        self.random = random
        partitionCount = partitions
        self.tokensPerSlice = tokensPerSlice
        clients = (0..<channels).map { Client(channel: $0, partition: $0 % partitions, endsAt: .max) }
        logs = (0..<partitions).map { InMemoryStream(JetStream.StreamSettings(name: "LOG_\($0)", subjects: ["log.\($0)"])) }
        apns = APNsRecord(channels: channels, partitions: partitions, tokensPerSlice: tokensPerSlice)
        for number in 0..<count { startGateway("g\(number)") }
        // In half the partitions the matches end together while the faults go on: those
        // partitions go quiet.
        for partition in 0..<partitions where chance(faults.quietPartitionRate) {
            let end = Int64(pick(5_000..<30_000)) * 1_000_000
            for channel in clients.indices where clients[channel].partition == partition { clients[channel].endsAt = end }
        }
        for channel in clients.indices { schedule(.clientPosts(channel: channel), after: .milliseconds(Int64(pick(0..<200)))) }
    }

    // MARK: Scenario

    private mutating func startGateway(_ name: String) {
        let index = leases.start(name)
        gateways.append(Gateway(fences: newFences(index), partitions: partitionCount, run: 0))
    }

    /// A new process's fences (none held), read on its clock.
    private func newFences(_ index: Int) -> PartitionFences {
        let instance = leases.instances[index]
        let (start, rate, clock) = (instance.clockStart, instance.clockRate, clock)
        return PartitionFences(partitions: partitionCount) {
            LeaseSimulation.Instance.localNow(at: clock.now, clockStart: start, clockRate: rate)
        }
    }

    /// Faults for `duration`: every 1 to 4 s a gateway is paused (up to 7 s, past its lease), cut
    /// off from the cluster (up to 6 s), or killed and started again 2 to 5 s later (never the
    /// last one running); then every fault stops, the providers send what they still owe, and
    /// the cluster settles for `settle`. Returns the failures.
    mutating func run(chaos duration: Duration, settle: Duration) -> [String] {
        chaosEnd = clock.now + duration.inNanoseconds
        var nextFault = clock.now + Int64(pick(1_000..<4_000)) * 1_000_000
        while faults.scheduled, nextFault < chaosEnd {
            runEvents(until: nextFault)
            injectFault()
            nextFault += Int64(pick(1_000..<4_000)) * 1_000_000
        }
        runEvents(until: chaosEnd)
        leases.faults.dropRate = 0
        for client in clients.indices { clients[client].endsAt = min(clients[client].endsAt, chaosEnd) }
        for second in 0..<Int(settle.inNanoseconds / 1_000_000_000) {
            runEvents(until: chaosEnd + Int64(second + 1) * 1_000_000_000)
        }
        checkTheEnd()
        return failures + leases.failures
    }

    private mutating func injectFault() {
        let live = gateways.indices.filter { leases.instances[$0].connection == .up && !leases.isPaused($0) }
        guard let victim = live.isEmpty ? nil : live[pick(0..<live.count)] else { return }
        switch pick(0..<6) {
        case 0, 1:
            statistics.pauses += 1
            leases.pause(victim, for: .milliseconds(Int64(pick(300..<7_000))))
        case 2:
            statistics.isolations += 1
            leases.isolate(victim)
            schedule(.heal(gateway: victim), after: .milliseconds(Int64(pick(500..<6_000))))
        case 3, 4:
            cutLink(victim)
        default:
            guard live.count > 1 else { return }
            statistics.kills += 1
            leases.kill(victim)
            schedule(.restart(gateway: victim), after: .milliseconds(Int64(pick(2_000..<5_000))))
        }
    }

    /// The link to the servers stops passing bytes both ways, past the lease: what the gateway
    /// sends meanwhile (writes in their retry loop, saves) waits in it and arrives when it is
    /// mended; by chance (``Faults/pauseWithCutRate``) the gateway is stopped 0.3 s in as well,
    /// for as long.
    private mutating func cutLink(_ victim: Int) {
        statistics.cutLinks += 1
        let length = Int64(pick(3_500..<7_000)) * 1_000_000
        gateways[victim].linkHeldUntil = clock.now + length
        leases.isolate(victim)
        events.push(.heal(gateway: victim), at: clock.now + length)
        if chance(faults.pauseWithCutRate) { events.push(.pause(gateway: victim, .nanoseconds(length)), at: clock.now + 300_000_000) }
    }

    /// Runs the lease simulation's events and this one's in time order up to `end`.
    private mutating func runEvents(until end: Int64) {
        while true {
            let leaseNext = leases.nextEventTime ?? .max
            let ownNext = events.nextTime ?? .max
            let next = min(leaseNext, ownNext)
            guard next <= end else { break }
            clock.now = next
            if leaseNext <= ownNext {
                leases.step()
                for index in leases.takeFedInstances() { publishHolds(of: index) }
                for change in leases.takeOwnershipChanges() { ownershipChanged(change) }
            } else {
                leases.advance(to: next)
                if let (_, event) = events.pop() { handle(event) }
            }
        }
        clock.now = end
        leases.advance(to: end)
    }

    /// What a gateway's keeper tells its fences after an input: the holds of its machine.
    private func publishHolds(of index: Int) {
        let instance = leases.instances[index]
        let now = leases.localNow(index)
        var held: [Int: (fence: Fence, until: ContinuousClock.Instant)] = [:]
        for partition in instance.leases.ownedPartitions {
            if let hold = instance.leases.fenceHold(for: partition, now: now) { held[partition] = hold }
        }
        gateways[index].fences.update(held)
    }

    // MARK: Events

    private enum Event {
        case clientPosts(channel: Int)
        case clientTimesOut(channel: Int, attempt: Int)
        case clientHears(channel: Int, attempt: Int, accepted: Bool)
        case request(gateway: Int, run: Int, channel: Int, seq: Int, attempt: Int, last: Bool)
        case published(gateway: Int, run: Int, partition: Int, Publish)
        case publishAnswered(gateway: Int, run: Int, partition: Int, write: Int, attempt: Int, Result<JetStream.Acknowledgement, NATSError>)
        case publishTimedOut(gateway: Int, run: Int, partition: Int, write: Int, attempt: Int)
        case publishRetried(gateway: Int, run: Int, partition: Int, write: Int)
        case logRead(gateway: Int, run: Int, partition: Int, from: UInt64, read: Int)
        case logAnswered(gateway: Int, run: Int, partition: Int, read: Int, [InMemoryStream.Message], last: UInt64)
        case readTimedOut(gateway: Int, run: Int, partition: Int, read: Int)
        case takeoverAgain(gateway: Int, run: Int, partition: Int, Fence)
        case pushWritten(gateway: Int, run: Int, Push)
        case sliceRead(gateway: Int, run: Int, partition: Int, slice: Int)
        case sliceAnswered(gateway: Int, run: Int, partition: Int, slice: Int, position: Int, revision: UInt64)
        case sliceReadTimedOut(gateway: Int, run: Int, partition: Int, slice: Int)
        case sliceSends(gateway: Int, run: Int, partition: Int, slice: Int)
        case sliceRestarts(gateway: Int, run: Int, partition: Int, slice: Int)
        case saved(gateway: Int, run: Int, partition: Int, slice: Int, save: Int, position: Int, expected: UInt64?)
        case saveAnswered(gateway: Int, run: Int, partition: Int, slice: Int, save: Int, position: Int, Result<JetStream.Acknowledgement, NATSError>)
        case saveTimedOut(gateway: Int, run: Int, partition: Int, slice: Int, save: Int)
        case heal(gateway: Int)
        case pause(gateway: Int, Duration)
        case restart(gateway: Int)
    }

    /// Why a log is read.
    enum LogReading {
        case takeover(Fence)
        case catchUp
        /// Whether the message at `sequence` carries the message id of write `write`.
        case storedEarlier(write: Int, sequence: UInt64)
    }

    private mutating func handle(_ event: Event) {
        if let (gateway, run) = receiver(of: event) {
            guard gateways[gateway].run == run, leases.instances[gateway].connection != .killed else { return }
            if let resumes = leases.instances[gateway].pausedUntil, resumes > clock.now {
                // On waking, a loop handles what its sockets hold before the timers that expired
                // meanwhile (libevent activates I/O, then timeouts): an answer that came during
                // the pause is taken before the retry that would have replaced it.
                events.push(event, at: resumes + (isTimer(event) ? 1 : 0))
                return
            }
        }
        switch event {
        case .clientPosts(let channel): clientPosts(channel)
        case .clientTimesOut(let channel, let attempt):
            if clients[channel].attempt == attempt { retryPost(channel) }
        case .clientHears(let channel, let attempt, let accepted): clientHears(channel, attempt: attempt, accepted: accepted)
        case .request(let gateway, _, let channel, let seq, let attempt, let last):
            // Aimed at the window of a quiet partition: the owner's link is cut as it takes the
            // channel's last event, whose write then waits in the link.
            if last, gateways[gateway].linkHeldUntil == nil, strikes(faults.aimedCutRate) { cutLink(gateway) }
            receive(channel: channel, seq: seq, attempt: attempt, at: gateway)
        case .published(let gateway, let run, let partition, let publish): serverStores(publish, in: partition, from: gateway, run: run)
        case .publishAnswered(let gateway, _, let partition, let write, let attempt, let result):
            publishAnswered(gateway, partition, write: write, attempt: attempt, result)
        case .publishTimedOut(let gateway, _, let partition, let write, let attempt):
            publishTimedOut(gateway, partition, write: write, attempt: attempt)
        case .publishRetried(let gateway, _, let partition, let write):
            if gateways[gateway].views[partition].writing?.id == write { sendAttempt(gateway, partition) }
        case .logRead(let gateway, let run, let partition, let from, let read):
            let log = logs[partition]
            let messages = log.messages.filter { $0.sequence >= from }
            send(.logAnswered(gateway: gateway, run: run, partition: partition, read: read, messages, last: log.lastSequence), from: gateway)
        case .logAnswered(let gateway, _, let partition, let read, let messages, let last):
            if let reading = gateways[gateway].views[partition].pendingReads.removeValue(forKey: read) {
                logAnswered(gateway, partition, reading, messages, last: last)
            }
        case .readTimedOut(let gateway, _, let partition, let read):
            if let reading = gateways[gateway].views[partition].pendingReads.removeValue(forKey: read) { readTimedOut(gateway, partition, reading) }
        case .takeoverAgain(let gateway, _, let partition, let fence):
            if gateways[gateway].views[partition].takingOver == fence { beginTakeover(gateway, partition, fence) }
        case .pushWritten(let gateway, _, let push): pushWritten(push, by: gateway)
        case .sliceRead(let gateway, let run, let partition, let slice):
            let last = saves.messages.last { $0.subject == "slices.\(partition)" }
            send(.sliceAnswered(gateway: gateway, run: run, partition: partition, slice: slice,
                                position: last.map { Int(String(decoding: $0.payload, as: UTF8.self)) ?? 0 } ?? 0,
                                revision: last?.sequence ?? 0), from: gateway)
        case .sliceAnswered(let gateway, _, let partition, let slice, let position, let revision):
            sliceAnswered(gateway, partition, slice: slice, position: position, revision: revision)
        case .sliceReadTimedOut(let gateway, _, let partition, let slice):
            let view = gateways[gateway].views[partition]
            if view.slice == slice, view.sliceRun == nil { readSlice(gateway, partition) }
        case .sliceSends(let gateway, _, let partition, let slice): sliceSends(gateway, partition, slice: slice)
        case .sliceRestarts(let gateway, _, let partition, let slice):
            let view = gateways[gateway].views[partition]
            if view.slice == slice, view.fence != nil { startSlice(gateway, partition) }
        case .saved(let gateway, let run, let partition, let slice, let save, let position, let expected):
            serverSaves(position, of: partition, expected: expected, from: gateway, run: run, slice: slice, save: save)
        case .saveAnswered(let gateway, _, let partition, let slice, let save, let position, let result):
            saveAnswered(gateway, partition, slice: slice, save: save, position: position, result)
        case .saveTimedOut(let gateway, _, let partition, let slice, let save):
            // Unanswered: perhaps stored; the next save, expecting the one before, tells.
            let view = gateways[gateway].views[partition]
            if view.slice == slice, view.sliceRun?.saving == save { view.sliceRun?.saving = nil }
        case .heal(let gateway): leases.heal(gateway)
        case .pause(let gateway, let duration): leases.pause(gateway, for: duration)
        case .restart(let gateway):
            leases.restart(gateway)
            gateways[gateway] = Gateway(fences: newFences(gateway), partitions: partitionCount, run: gateways[gateway].run + 1)
        }
    }

    /// The gateway (and its run) an event is handled by; nil for the servers and the clients.
    private func receiver(of event: Event) -> (Int, Int)? {
        switch event {
        case .request(let gateway, let run, _, _, _, _), .publishAnswered(let gateway, let run, _, _, _, _),
             .publishTimedOut(let gateway, let run, _, _, _), .publishRetried(let gateway, let run, _, _),
             .logAnswered(let gateway, let run, _, _, _, _), .readTimedOut(let gateway, let run, _, _), .takeoverAgain(let gateway, let run, _, _),
             .pushWritten(let gateway, let run, _), .sliceAnswered(let gateway, let run, _, _, _, _),
             .sliceReadTimedOut(let gateway, let run, _, _), .sliceSends(let gateway, let run, _, _), .sliceRestarts(let gateway, let run, _, _),
             .saveAnswered(let gateway, let run, _, _, _, _, _), .saveTimedOut(let gateway, let run, _, _, _):
            (gateway, run)
        case .clientPosts, .clientTimesOut, .clientHears, .published, .logRead, .sliceRead, .saved, .heal, .pause, .restart:
            nil
        }
    }

    /// Whether the event is a gateway's own timer (or its loop's own work), not a message.
    private func isTimer(_ event: Event) -> Bool {
        switch event {
        case .publishTimedOut, .publishRetried, .readTimedOut, .takeoverAgain, .pushWritten, .sliceReadTimedOut, .sliceSends, .sliceRestarts,
             .saveTimedOut:
            true
        default:
            false
        }
    }

    private mutating func schedule(_ event: Event, after delay: Duration) {
        events.push(event, at: clock.now + delay.inNanoseconds)
    }

    /// A message between a gateway and the servers, either way: while its link is cut it waits
    /// in the link and arrives, in order, once the link is mended; while the gateway is cut off
    /// otherwise it is lost; else it may be lost by chance, and arrives after the network's
    /// delay (plus `held`).
    private mutating func send(_ event: Event, from gateway: Int, held: Int64 = 0) {
        if let mended = gateways[gateway].linkHeldUntil, mended > clock.now {
            let at = max(gateways[gateway].linkFreeAt, mended + delay())
            gateways[gateway].linkFreeAt = at
            return events.push(event, at: at)
        }
        guard leases.instances[gateway].connection == .up, !drops() else { return }
        events.push(event, at: clock.now + delay() + held)
    }

    // MARK: Providers

    private mutating func clientPosts(_ channel: Int) {
        guard !clients[channel].finished else { return }
        clients[channel].seq += 1
        clients[channel].attempt += 1
        clients[channel].isLast = clock.now >= clients[channel].endsAt
        sendPost(channel)
    }

    private mutating func retryPost(_ channel: Int) {
        clients[channel].attempt += 1
        sendPost(channel)
    }

    /// The post goes to any gateway (a load balancer's pick); one that is dead never answers.
    private mutating func sendPost(_ channel: Int) {
        let client = clients[channel]
        let gateway = pick(0..<gateways.count)
        schedule(.clientTimesOut(channel: channel, attempt: client.attempt), after: faults.clientTimeout)
        guard leases.instances[gateway].connection != .killed else { return }
        events.push(.request(gateway: gateway, run: gateways[gateway].run, channel: channel, seq: client.seq, attempt: client.attempt,
                             last: client.isLast), at: clock.now + delay())
    }

    private mutating func clientHears(_ channel: Int, attempt: Int, accepted: Bool) {
        guard clients[channel].attempt == attempt else { return }
        clients[channel].attempt += 1
        guard accepted else {
            // Sent again at once, to another gateway as likely as not (as a forward would).
            schedule(.clientTimesOut(channel: channel, attempt: clients[channel].attempt), after: .milliseconds(Int64(pick(5..<30))))
            return
        }
        apns.acknowledged(channel: channel, seq: clients[channel].seq)
        statistics.acknowledged += 1
        if clients[channel].isLast { clients[channel].finished = true; return }
        schedule(.clientPosts(channel: channel), after: .milliseconds(Int64(pick(20..<250))))
    }

    private mutating func answer(_ channel: Int, attempt: Int, accepted: Bool) {
        guard !drops() else { return }
        events.push(.clientHears(channel: channel, attempt: attempt, accepted: accepted), at: clock.now + delay())
    }

    // MARK: A gateway's channels

    /// A provider's event reaches a gateway: it takes it for a partition it serves under a fence
    /// that holds (a duplicate is answered as one), else answers 503.
    private mutating func receive(channel: Int, seq: Int, attempt: Int, at index: Int) {
        let partition = clients[channel].partition
        let gateway = gateways[index]
        guard let fence = gateway.views[partition].fence, gateway.fences.holds(fence, of: partition),
              !gateway.views[partition].stale else {
            return answer(channel, attempt: attempt, accepted: false)
        }
        if gateway.views[partition].states[channel, default: 0] >= seq { return answer(channel, attempt: attempt, accepted: true) }
        gateway.views[partition].waiting.append(Waiter(channel: channel, seq: seq, attempt: attempt))
        startWrite(index, partition)
    }

    private mutating func startWrite(_ index: Int, _ partition: Int) {
        let view = gateways[index].views[partition]
        guard view.writing == nil, !view.waiting.isEmpty, let fence = view.fence else { return }
        gateways[index].writes += 1
        let waiters = view.waiting
        gateways[index].views[partition].waiting = []
        let entries = waiters.map { "\($0.channel):\($0.seq)" }.joined(separator: ";")
        gateways[index].views[partition].writing = Write(id: gateways[index].writes, messageID: "g\(index).\(gateways[index].run).\(gateways[index].writes)",
                                                         payload: Array(entries.utf8), takeover: nil, fence: fence, expected: view.lastSequence,
                                                         startedAt: localNow(index), waiters: waiters)
        sendAttempt(index, partition)
    }

    /// One attempt of the log's write in flight, sent only while its fence holds.
    private mutating func sendAttempt(_ index: Int, _ partition: Int) {
        guard var write = gateways[index].views[partition].writing else { return }
        guard gateways[index].fences.holds(write.fence, of: partition) else {
            return writeFailed(index, partition, stale: false)
        }
        write.attempt += 1
        gateways[index].views[partition].writing = write
        let run = gateways[index].run
        let publish = Publish(messageID: write.messageID, payload: write.payload, takeover: write.takeover, fence: write.fence, expected: write.expected)
        schedule(.publishTimedOut(gateway: index, run: run, partition: partition, write: write.id, attempt: write.attempt), after: Self.answerTimeout)
        let held = strikes(faults.linkHoldRate) ? Int64(random.unit() * Double(faults.linkHold.inNanoseconds)) : 0
        send(.published(gateway: index, run: run, partition: partition, publish), from: index, held: held)
        if strikes(faults.duplicateRate) { send(.published(gateway: index, run: run, partition: partition, publish), from: index, held: held) }
    }

    private mutating func publishAnswered(_ index: Int, _ partition: Int, write id: Int, attempt: Int,
                                          _ result: Result<JetStream.Acknowledgement, NATSError>) {
        guard let write = gateways[index].views[partition].writing, write.id == id, write.attempt == attempt else { return }
        switch result {
        case .success(let acknowledgement):
            written(index, partition, at: acknowledgement.sequence)
        case .failure(let error) where error.isWrongLastSequence && write.attempt > 1:
            gateways[index].views[partition].writing?.attempt += 1
            readLog(index, partition, .storedEarlier(write: id, sequence: write.expected + 1))
        case .failure:
            writeFailed(index, partition, stale: true)
        }
    }

    private mutating func publishTimedOut(_ index: Int, _ partition: Int, write id: Int, attempt: Int) {
        guard let write = gateways[index].views[partition].writing, write.id == id, write.attempt == attempt else { return }
        guard localNow(index) - write.startedAt < Self.retryLimit else { return writeFailed(index, partition, stale: true) }
        schedule(.publishRetried(gateway: index, run: gateways[index].run, partition: partition, write: id), after: .milliseconds(100))
    }

    /// The write in flight was stored at `sequence`: its entries are applied and acknowledged,
    /// and their states pushed (a takeover record: the partition is served).
    private mutating func written(_ index: Int, _ partition: Int, at sequence: UInt64) {
        guard let write = gateways[index].views[partition].writing else { return }
        let gateway = gateways[index]
        gateway.views[partition].writing = nil
        gateway.views[partition].lastSequence = sequence
        if let fence = write.takeover {
            // A record of an ownership given up meanwhile serves nothing (the node asks whether
            // the partition is still being taken over under that fence).
            guard gateway.views[partition].takingOver == fence else { return startWrite(index, partition) }
            gateway.views[partition].takingOver = nil
            gateway.views[partition].fence = fence
            servedFence[partition] = max(servedFence[partition], fence)
            gateway.views[partition].decided = [:]
            statistics.takeovers += 1
            for (channel, state) in gateway.views[partition].states { decidePush(index, partition, channel: channel, seq: state) }
            startSlice(index, partition)
        } else {
            if write.fence < servedFence[partition] { statistics.acknowledgedByADeposedOwner += write.waiters.count }
            for waiter in write.waiters {
                gateway.views[partition].states[waiter.channel] = max(gateway.views[partition].states[waiter.channel, default: 0], waiter.seq)
                answer(waiter.channel, attempt: waiter.attempt, accepted: true)
            }
            for channel in Set(write.waiters.map(\.channel)) {
                decidePush(index, partition, channel: channel, seq: gateway.views[partition].states[channel, default: 0])
            }
        }
        startWrite(index, partition)
    }

    /// The write in flight fails: its providers get 503; `stale`: the log may hold what this
    /// gateway has not read, so it is read before the next write.
    private mutating func writeFailed(_ index: Int, _ partition: Int, stale: Bool) {
        guard let write = gateways[index].views[partition].writing else { return }
        statistics.refusedWrites += 1
        let gateway = gateways[index]
        gateway.views[partition].writing = nil
        for waiter in write.waiters + gateway.views[partition].waiting { answer(waiter.channel, attempt: waiter.attempt, accepted: false) }
        gateway.views[partition].waiting = []
        if let fence = write.takeover {
            guard stale, gateway.views[partition].takeoverAttempts < Self.takeoverAttempts else {
                // Given up (the fence lapsed, or writes kept slipping in): the node tries the
                // whole takeover again a moment later, for as long as it owns the partition.
                gateway.views[partition].takeoverAttempts = 0
                return schedule(.takeoverAgain(gateway: index, run: gateway.run, partition: partition, fence), after: .milliseconds(500))
            }
            return beginTakeover(index, partition, fence)
        }
        if stale {
            gateway.views[partition].stale = true
            readLog(index, partition, .catchUp)
        }
    }

    // MARK: Takeovers

    private mutating func ownershipChanged(_ change: LeaseSimulation.OwnershipChange) {
        let index = change.instance, partition = change.partition
        let view = gateways[index].views[partition]
        if let fence = change.fence {
            view.takeoverAttempts = 0
            beginTakeover(index, partition, fence)
        } else {
            view.fence = nil
            view.takingOver = nil
            view.slice += 1
            for waiter in view.waiting { answer(waiter.channel, attempt: waiter.attempt, accepted: false) }
            view.waiting = []
        }
    }

    /// Reads the log to its end, then writes the takeover record (``logAnswered``).
    private mutating func beginTakeover(_ index: Int, _ partition: Int, _ fence: Fence) {
        let view = gateways[index].views[partition]
        view.takingOver = fence
        view.takeoverAttempts += 1
        readLog(index, partition, .takeover(fence))
    }

    /// Asks the servers for the log past what the view read (or for one message), with a timeout.
    private mutating func readLog(_ index: Int, _ partition: Int, _ reading: LogReading) {
        let view = gateways[index].views[partition]
        view.reads += 1
        view.pendingReads[view.reads] = reading
        let from: UInt64
        if case .storedEarlier(_, let sequence) = reading { from = sequence } else { from = view.lastSequence + 1 }
        send(.logRead(gateway: index, run: gateways[index].run, partition: partition, from: from, read: view.reads), from: index)
        schedule(.readTimedOut(gateway: index, run: gateways[index].run, partition: partition, read: view.reads), after: .seconds(1))
    }

    /// A read unanswered: asked again; a write that could not learn whether it was stored fails
    /// and the log is read again.
    private mutating func readTimedOut(_ index: Int, _ partition: Int, _ reading: LogReading) {
        let view = gateways[index].views[partition]
        switch reading {
        case .storedEarlier(let write, _):
            if view.writing?.id == write { writeFailed(index, partition, stale: true) }
        case .takeover(let fence):
            if view.takingOver == fence { readLog(index, partition, reading) }
        case .catchUp:
            if view.stale { readLog(index, partition, reading) }
        }
    }

    private mutating func logAnswered(_ index: Int, _ partition: Int, _ reading: LogReading, _ messages: [InMemoryStream.Message], last: UInt64) {
        let view = gateways[index].views[partition]
        switch reading {
        case .storedEarlier(let write, let sequence):
            guard let writing = view.writing, writing.id == write else { return }
            if messages.first(where: { $0.sequence == sequence })?.headers["Nats-Msg-Id"] == writing.messageID {
                written(index, partition, at: sequence)
            } else {
                writeFailed(index, partition, stale: true)
            }
        case .catchUp:
            let changed = replay(messages, into: view, last: last)
            view.stale = false
            if let fence = view.fence, gateways[index].fences.holds(fence, of: partition) {
                for channel in changed { decidePush(index, partition, channel: channel, seq: view.states[channel, default: 0]) }
            }
            startWrite(index, partition)
        case .takeover(let fence):
            guard view.takingOver == fence else { return }
            _ = replay(messages, into: view, last: last)
            view.stale = false
            guard !removed.contains(.takeoverRecord) else {
                view.writing = Write(id: 0, messageID: "", payload: [], takeover: fence, fence: fence, expected: last, startedAt: localNow(index), waiters: [])
                return written(index, partition, at: last)
            }
            guard view.writing == nil else {
                // A write of an earlier ownership is still in flight: it settles first.
                return schedule(.takeoverAgain(gateway: index, run: gateways[index].run, partition: partition, fence), after: .milliseconds(50))
            }
            gateways[index].writes += 1
            view.writing = Write(id: gateways[index].writes, messageID: "g\(index).\(gateways[index].run).\(gateways[index].writes)", payload: [],
                                 takeover: fence, fence: fence, expected: view.lastSequence, startedAt: localNow(index), waiters: [])
            sendAttempt(index, partition)
        }
    }

    /// Applies what the log holds past the view's last sequence; the channels whose state changed.
    private func replay(_ messages: [InMemoryStream.Message], into view: PartitionView, last: UInt64) -> Set<Int> {
        var changed: Set<Int> = []
        for message in messages where message.sequence > view.lastSequence && message.headers[ChannelLogLayout.takeoverHeader] == nil {
            for (channel, seq) in Self.entries(of: message.payload) where seq > view.states[channel, default: 0] {
                view.states[channel] = seq
                changed.insert(channel)
            }
        }
        view.lastSequence = max(view.lastSequence, last)
        return changed
    }

    static func entries(of payload: [UInt8]) -> [(channel: Int, seq: Int)] {
        String(decoding: payload, as: UTF8.self).split(separator: ";").compactMap { entry in
            let parts = entry.split(separator: ":")
            guard parts.count == 2, let channel = Int(parts[0]), let seq = Int(parts[1]) else { return nil }
            return (channel, seq)
        }
    }

    // MARK: The servers

    private mutating func serverStores(_ publish: Publish, in partition: Int, from gateway: Int, run: Int) {
        var headers = ["Simulation-Fence": String(publish.fence.revision.value)]
        if let takeover = publish.takeover { headers[ChannelLogLayout.takeoverHeader] = String(takeover.revision.value) }
        let result: Result<JetStream.Acknowledgement, NATSError>
        if faults.idCheckedFirst, let stored = logs[partition].messages.first(where: { $0.headers["Nats-Msg-Id"] == publish.messageID }) {
            result = .success(JetStream.Acknowledgement(stream: "LOG_\(partition)", sequence: stored.sequence, duplicate: true))
        } else {
            result = logs[partition].store(publish.payload, subject: "log.\(partition)", headers: headers,
                                           conditions: JetStream.PublishConditions(messageID: publish.messageID, expectedLastSequence: publish.expected),
                                           now: UnixTime(nanoseconds: clock.now), operation: "publish")
        }
        if case .success(let acknowledgement) = result, !acknowledgement.duplicate {
            for problem in apns.stored(publish, in: partition) { fail(problem) }
        }
        guard let attempt = gateways[gateway].views[partition].writing?.attempt, gateways[gateway].run == run,
              let write = gateways[gateway].views[partition].writing?.id, gateways[gateway].views[partition].writing?.messageID == publish.messageID
        else { return }
        send(.publishAnswered(gateway: gateway, run: run, partition: partition, write: write, attempt: attempt, result), from: gateway)
    }

    private mutating func serverSaves(_ position: Int, of partition: Int, expected: UInt64?, from gateway: Int, run: Int, slice: Int, save: Int) {
        let result = saves.store(Array(String(position).utf8), subject: "slices.\(partition)", headers: [:],
                                 conditions: JetStream.PublishConditions(expectedLastSubjectSequence: expected),
                                 now: UnixTime(nanoseconds: clock.now), operation: "save")
        if case .success = result { for problem in apns.saved(position, of: partition) { fail(problem) } }
        send(.saveAnswered(gateway: gateway, run: run, partition: partition, slice: slice, save: save, position: position, result), from: gateway)
    }

    // MARK: Pushes

    /// A push of `channel`'s state `seq`, decided under the partition's fence, queued behind the
    /// gateway's earlier pushes (once per state and fence).
    private mutating func decidePush(_ index: Int, _ partition: Int, channel: Int, seq: Int) {
        let view = gateways[index].views[partition]
        guard seq > 0, let fence = view.fence, view.decided[channel, default: 0] < seq else { return }
        view.decided[channel] = seq
        queuePush(Push(kind: .state(channel: channel, seq: seq), partition: partition, fence: fence), by: index)
    }

    private mutating func queuePush(_ push: Push, by index: Int) {
        let held = strikes(faults.pushHoldRate) ? Int64(random.unit() * Double(faults.pushHold.inNanoseconds)) : 0
        let at = max(gateways[index].pushFreeAt, clock.now + Int64(pick(100..<2_000)) * 1_000 + held)
        gateways[index].pushFreeAt = at
        events.push(.pushWritten(gateway: index, run: gateways[index].run, push), at: at)
    }

    /// The connection's last write before the push's HEADERS: sent if its fence holds, else
    /// withheld (a state is decided again under a fence that holds; a slice stops).
    private mutating func pushWritten(_ push: Push, by index: Int) {
        let gateway = gateways[index]
        guard removed.contains(.pushFence) || gateway.fences.holds(push.fence, of: push.partition) else {
            statistics.withheld += 1
            let view = gateway.views[push.partition]
            switch push.kind {
            case .state(let channel, _):
                if let fence = view.fence, fence != push.fence, gateway.fences.holds(fence, of: push.partition) {
                    decidePush(index, push.partition, channel: channel, seq: view.states[channel, default: 0])
                }
            case .token(let slice, _):
                // The slice stops; the plan starts it again from its last save if the partition
                // is still served here.
                if view.slice == slice {
                    view.slice += 1
                    schedule(.sliceRestarts(gateway: index, run: gateway.run, partition: push.partition, slice: view.slice), after: .milliseconds(500))
                }
            }
            return
        }
        statistics.pushes += 1
        let gatewayName = leases.instances[index].id.name
        for problem in apns.arrives(push, from: gatewayName) { fail(problem) }
        if case .token(let slice, let token) = push.kind, let run = gateway.views[push.partition].sliceRun, run.slice == slice {
            gateway.views[push.partition].sliceRun?.delivered = max(run.delivered, token)
            if apns.timesSent(token: token, of: push.partition) > 1 { statistics.tokensSentTwice += 1 }
        }
    }

    // MARK: Slices of a personal job

    /// The partition's slice starts here from its last save (read first).
    private mutating func startSlice(_ index: Int, _ partition: Int) {
        let view = gateways[index].views[partition]
        view.slice += 1
        view.sliceRun = nil
        readSlice(index, partition)
    }

    private mutating func readSlice(_ index: Int, _ partition: Int) {
        let slice = gateways[index].views[partition].slice
        send(.sliceRead(gateway: index, run: gateways[index].run, partition: partition, slice: slice), from: index)
        schedule(.sliceReadTimedOut(gateway: index, run: gateways[index].run, partition: partition, slice: slice), after: .seconds(1))
    }

    private mutating func sliceAnswered(_ index: Int, _ partition: Int, slice: Int, position: Int, revision: UInt64) {
        let view = gateways[index].views[partition]
        guard view.slice == slice, let fence = view.fence else { return }
        view.sliceRun = SliceRun(slice: slice, fence: fence, sent: position, delivered: position, saved: position, revision: revision)
        schedule(.sliceSends(gateway: index, run: gateways[index].run, partition: partition, slice: slice), after: .milliseconds(Int64(pick(1..<5))))
    }

    private mutating func sliceSends(_ index: Int, _ partition: Int, slice: Int) {
        let view = gateways[index].views[partition]
        guard view.slice == slice, let run = view.sliceRun else { return }
        if run.sent < tokensPerSlice {
            view.sliceRun?.sent += 1
            queuePush(Push(kind: .token(slice: slice, token: run.sent + 1), partition: partition, fence: run.fence), by: index)
        }
        if run.saving == nil, run.delivered > run.saved, run.delivered - run.saved >= Self.saveEvery || run.delivered == tokensPerSlice {
            save(index, partition, run)
        }
        guard run.saved < tokensPerSlice else { return }
        schedule(.sliceSends(gateway: index, run: gateways[index].run, partition: partition, slice: slice), after: .milliseconds(Int64(pick(5..<40))))
    }

    /// Saves what reached APNs, fenced, over the save the run read or made last.
    private mutating func save(_ index: Int, _ partition: Int, _ run: SliceRun) {
        guard gateways[index].fences.holds(run.fence, of: partition) else { return }
        let view = gateways[index].views[partition]
        view.saves += 1
        view.sliceRun?.saving = view.saves
        let expected = removed.contains(.checkpointCompareAndSet) ? nil : run.revision
        send(.saved(gateway: index, run: gateways[index].run, partition: partition, slice: run.slice, save: view.saves, position: run.delivered,
                    expected: expected), from: index)
        schedule(.saveTimedOut(gateway: index, run: gateways[index].run, partition: partition, slice: run.slice, save: view.saves), after: .seconds(1))
    }

    private mutating func saveAnswered(_ index: Int, _ partition: Int, slice: Int, save: Int, position: Int,
                                       _ result: Result<JetStream.Acknowledgement, NATSError>) {
        let view = gateways[index].views[partition]
        guard view.slice == slice, view.sliceRun?.saving == save else { return }
        view.sliceRun?.saving = nil
        switch result {
        case .success(let acknowledgement):
            view.sliceRun?.saved = position
            view.sliceRun?.revision = acknowledgement.sequence
        case .failure:
            // Stored over another save: the run stops and starts again from the bucket's.
            if view.fence != nil { startSlice(index, partition) }
        }
    }

    // MARK: The end

    private mutating func checkTheEnd() {
        for (partition, log) in logs.enumerated() {
            var stored: [Int: Set<Int>] = [:]
            for message in log.messages {
                for (channel, seq) in Self.entries(of: message.payload) { stored[channel, default: []].insert(seq) }
            }
            for problem in apns.problemsAtTheEnd(stored: stored, channels: clients.filter { $0.partition == partition }.map(\.channel),
                                                              partition: partition) { fail(problem) }
        }
        for (channel, client) in clients.enumerated() where !client.finished {
            fail("channel \(channel): its provider never had event \(client.seq) acknowledged (attempt \(client.attempt))")
        }
    }

    /// Who serves what, for a failure's message: per gateway, its connection and per partition
    /// its fence, takeover, staleness, write in flight and reads out.
    var summary: String {
        gateways.indices.map { index in
            let instance = leases.instances[index]
            let views = gateways[index].views.enumerated().compactMap { partition, view -> String? in
                guard view.fence != nil || view.takingOver != nil || view.writing != nil || !view.pendingReads.isEmpty else { return nil }
                let fence = view.fence.map { "\($0.revision)" } ?? "-"
                let taking = view.takingOver.map { " taking \($0.revision)#\(view.takeoverAttempts)" } ?? ""
                let writing = view.writing.map { " writing \($0.id)@\($0.attempt)\($0.takeover == nil ? "" : "T")" } ?? ""
                let holds = view.fence.map { gateways[index].fences.holds($0, of: partition) } ?? false
                let slice = view.sliceRun.map { " slice \($0.slice) sent \($0.sent) delivered \($0.delivered) saved \($0.saved) saving \($0.saving ?? -1)" } ?? " slice \(view.slice) idle"
                return "p\(partition):\(fence)\(holds ? "" : "(lapsed)")\(taking)\(view.stale ? " stale" : "")\(writing) reads \(view.pendingReads.count)\(slice)"
            }
            return "\(instance.id) \(instance.connection) owns \(instance.leases.ownedPartitions): \(views.joined(separator: ", "))"
        }.joined(separator: " | ")
    }

    private mutating func fail(_ message: String) {
        if failures.count < 20 { failures.append("t=\(seconds) s: \(message)") }
    }

    // MARK: Clocks and chance

    var seconds: Double { Double(clock.now) / 1e9 }

    private func localNow(_ index: Int) -> ContinuousClock.Instant { leases.localNow(index) }

    private mutating func delay() -> Int64 {
        let low = faults.delay.lowerBound.inNanoseconds, high = faults.delay.upperBound.inNanoseconds
        return low + Int64(random.unit() * Double(high - low))
    }

    /// Whether a message is lost (never once the faults are over).
    private mutating func drops() -> Bool { faultsOn && chance(faults.dropRate) }

    /// Whether a fault happens now, at this rate (never once the faults are over).
    private mutating func strikes(_ rate: Double) -> Bool { faultsOn && chance(rate) }

    private var faultsOn: Bool { clock.now < chaosEnd }

    private mutating func chance(_ probability: Double) -> Bool { probability > 0 && random.unit() < probability }

    private mutating func pick(_ range: Range<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }
}

/// Virtual nanoseconds since the simulation began, readable by the gateways' fences.
private final class VirtualTime: Sendable {
    private let value = Atomic<Int64>(0)
    var now: Int64 {
        get { value.load(ordering: .relaxed) }
        set { value.store(newValue, ordering: .relaxed) }
    }
}
