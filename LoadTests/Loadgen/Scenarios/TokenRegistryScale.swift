import Dispatch
import Foundation
import LoadKit
import Measurements
import NATS
import NATSServers
import Synchronization
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore

/// `token-registry`: what the shared token registry of a cluster costs at scale (10 million
/// tokens by default), in one run:
///
/// 1. The baseline: the same registrations committed to one gateway's SQLite file, as a
///    gateway without a cluster does.
/// 2. The layout not chosen, on a cluster of its own: one subject per token and per follow in a
///    stream that keeps the last message of each (a key-value bucket's layout), so an audience
///    would be a filtered scan of the servers; what each token costs the servers' memory.
/// 3. The layout chosen: as many tokens as the baseline registered through a gateway's
///    ``SharedTokenRegistry`` (lists logged to the registry stream and applied to the gateway's
///    file), the rest logged as the same entries by a plain publisher; what the three servers
///    hold in memory and on disk, then in memory again after one restarts; a second gateway's
///    copy built from the whole log as a new gateway's is; every follow walked in that copy.
struct TokenRegistryScale {
    struct Options {
        var tokens = 10_000_000
        var listSize = 1_000
        var listsInFlight = 16
        var follows = 20
        var replicas = 3
        /// Tokens of the baseline and of the one-subject-per-token sample (fewer than `tokens`
        /// when that is large: their cost per token does not change with the count).
        var sampleTokens = 1_000_000
    }

    static let name = "token-registry"

    let options: Options

    func run() async throws -> ScenarioResult {
        let log = ScenarioLog(Self.name)
        let started = monotonicNanoseconds()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-registry-scale-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sample = min(options.sampleTokens, options.tokens)

        let baselineFile = try StoreWriter(path: directory + "/baseline.sqlite")
        let baseline = try register(0..<sample, through: baselineFile)
        baselineFile.close()
        log.say(String(format: "baseline: %@ tokens committed to one SQLite file in %.1f s (%@ tokens/s)", ReportNumbers.grouped(Double(sample)),
                       baseline.seconds, ReportNumbers.grouped(baseline.rate)))

        let subjects = try await subjectLayoutCost(tokens: sample)
        log.say(String(format: "one subject per token and follow: %.0f bytes of server memory per token and node (%.0f after a restart)",
                       subjects.memoryPerToken, subjects.memoryPerTokenAfterRestart))

        let cluster = try await NATSCluster.start(size: 3)
        let before = ServersReading(cluster)
        let loop = EventLoop.start(name: "registry-scale")
        defer { loop.stopAndWait() }
        let connection = try NATSConnection.connect(NATSSettings(servers: cluster.urls, name: "registry-scale"), loop: loop, events: { _ in })
        defer { connection.close() }
        let jetStream = try JetStream(connection)
        let layout = RegistryLogLayout()
        let first = try SharedTokenRegistry.open(jetStream: jetStream, layout: layout, replicas: options.replicas,
                                                 local: try StoreWriter(path: directory + "/first.sqlite"), loop: loop)
        let logged = try register(0..<sample, through: first)
        first.close()
        log.say(String(format: "%@ tokens registered through a gateway on the cluster (logged, then applied to its copy) in %.1f s (%@ tokens/s)",
                       ReportNumbers.grouped(Double(sample)), logged.seconds, ReportNumbers.grouped(logged.rate)))
        // The rest as the same entries, published as fast as the cluster takes them.
        let filled = try publish(sample..<options.tokens, to: layout.subject, jetStream: jetStream, loop: loop)
        log.say(String(format: "%@ more tokens logged in %.1f s (%@ tokens/s)", ReportNumbers.grouped(Double(options.tokens - sample)),
                       filled.seconds, ReportNumbers.grouped(filled.rate)))
        try await Task.sleep(for: .seconds(5))
        let after = ServersReading(cluster)
        let stream = try JetStream.retryingWhileForming { () throws(NATSError) in try jetStream.streamState(layout.streamName) }
        await cluster.kill(0)
        try await cluster.restart(0)
        try await Task.sleep(for: .seconds(5))
        let restartedMemory = ServersReading(cluster).memory[0]

        let catchUpStart = monotonicNanoseconds()
        let second = try SharedTokenRegistry.open(jetStream: jetStream, layout: layout, replicas: options.replicas,
                                                  local: try StoreWriter(path: directory + "/second.sqlite"), loop: loop)
        let catchUpSeconds = Double(monotonicNanoseconds() - catchUpStart) / 1e9
        let readAgain = second.gapsReadAgain.load(ordering: .relaxed)
        second.close()
        log.say(String(format: "a second gateway's copy built from the log in %.1f s (subscribed again %d times for a message lost on the way)",
                       catchUpSeconds, readAgain))
        let copyBytes = fileBytes(directory + "/second.sqlite")
        let scan = try walkEveryFollow(path: directory + "/second.sqlite")
        log.say(String(format: "every follow walked in the copy: %@ tokens in %.1f s", ReportNumbers.grouped(Double(scan.tokens)), scan.seconds))
        await cluster.stop()

        let tokens = Double(options.tokens)
        let perToken = { (bytes: Int) in String(format: "%.0f", Double(bytes) / tokens) }
        let memoryGrowth = zip(after.memory, before.memory).map { $0 - $1 }
        let logMemoryPerToken = Double(memoryGrowth.max() ?? 0) / tokens
        let diskGrowth = zip(after.disk, before.disk).map { $0 - $1 }
        return ScenarioResult(
            name: Self.name,
            description: "the shared token registry at \(ReportNumbers.grouped(tokens)) tokens: registration through the cluster against one SQLite file, "
                + "the servers' memory and disk per token against one subject per token, a new gateway's copy and the audience scans",
            parameters: [.init(name: "tokens", value: String(options.tokens)), .init(name: "list size", value: String(options.listSize)),
                         .init(name: "lists in flight", value: String(options.listsInFlight)), .init(name: "follows", value: String(options.follows)),
                         .init(name: "replicas", value: String(options.replicas)), .init(name: "sample tokens", value: String(sample))],
            durationSeconds: Double(monotonicNanoseconds() - started) / 1e9,
            throughputs: [.init(name: "registrations through the cluster (logged and applied)", unit: "tokens/s", value: logged.rate,
                                ceilingRatio: logged.rate / baseline.rate),
                          .init(name: "registry entries logged without a copy (lists of \(options.listSize))", unit: "tokens/s", value: filled.rate,
                                ceilingRatio: filled.rate / baseline.rate),
                          .init(name: "registrations to one SQLite file (baseline)", unit: "tokens/s", value: baseline.rate, ceilingRatio: 1),
                          .init(name: "a new gateway's copy built from the log", unit: "tokens/s", value: tokens / catchUpSeconds,
                                ceilingRatio: tokens / catchUpSeconds / baseline.rate),
                          .init(name: "audience scan of the copy (pages of 1,000)", unit: "tokens/s", value: Double(scan.tokens) / scan.seconds)],
            tables: [.init(title: "What the NATS servers hold per token (each node)",
                           columns: ["layout", "tokens", "memory growth B/token", "memory after a restart B/token", "disk B/token"],
                           rows: [["one log, a copy per gateway (chosen)", ReportNumbers.grouped(tokens), String(format: "%.0f", logMemoryPerToken),
                                   String(format: "%.0f", Double(restartedMemory - before.memory[0]) / tokens), perToken(diskGrowth.max() ?? 0)],
                                  ["one subject per token and follow", ReportNumbers.grouped(Double(sample)), String(format: "%.0f", subjects.memoryPerToken),
                                   String(format: "%.0f", subjects.memoryPerTokenAfterRestart), String(format: "%.0f", subjects.diskPerToken)]]),
                     .init(title: "The cluster and a gateway at \(ReportNumbers.grouped(tokens)) tokens",
                           columns: ["registry stream", "servers' memory (3 nodes)", "servers' disk (3 nodes)", "a gateway's copy (SQLite file)",
                                     "its build from the log", "messages lost on the way, read again"],
                           rows: [[megabytes(Int(stream?.bytes ?? 0)), megabytes(after.memory.reduce(0, +)), megabytes(after.disk.reduce(0, +)),
                                   megabytes(copyBytes), String(format: "%.0f s", catchUpSeconds), String(readAgain)]])],
            checks: [.init(name: "every token in a new gateway's copy", measured: Double(scan.tokens) / tokens, target: 1, comparison: .atLeast),
                     .init(name: "servers' memory per token, chosen layout / one subject per token", measured: logMemoryPerToken / max(1, subjects.memoryPerToken),
                           target: 0.25, comparison: .atMost)],
            notes: ["Each token follows one of \(options.follows) teams and one of 5 leagues and belongs to a user of its own; tokens are random, as APNs issues them."])
    }

    // MARK: Registrations

    /// A push-to-start registration of token number `n`: a random-looking token of 64 hex digits.
    func registration(_ n: Int, at time: UnixTime) -> TokenOperation {
        var random = SplitMix64(seed: UInt64(n))
        let token = (0..<4).map { _ in
            let digits = String(random.next(), radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }.joined()
        return .registerToken(TokenRecord(token: token, kind: .pushToStart, userID: "user-\(n)",
                                          follows: ["team:\(n % options.follows)", "league:\(n % 5)"], registeredAt: time))
    }

    struct Registered {
        var seconds: Double
        var rate: Double
    }

    /// Registers tokens `numbers` through `writer` in lists of `listSize`, `listsInFlight` at once.
    func register(_ numbers: Range<Int>, through writer: any PersonalStoreWriter) throws -> Registered {
        try inLists(numbers, failing: "registering tokens") { list, done in
            writer.submit(list) { result in done(Self.problem(result)) }
        }
    }

    /// Logs the registrations of tokens `numbers` as the registry's entries (lists of
    /// `listSize`), without a copy applying them: how fast the cluster takes the log.
    func publish(_ numbers: Range<Int>, to subject: String, jetStream: JetStream, loop: EventLoop) throws -> Registered {
        try inLists(numbers, failing: "logging tokens") { list, done in
            guard case .registerToken(let first)? = list.first else { return done(nil) }
            jetStream.publish(RegistryEntry(list)!.binaryEncoded, to: subject, conditions: .init(messageID: "fill:\(first.token)"), loop: loop) { result in
                done(Self.problem(result))
            }
        }
    }

    private static func problem<T, E>(_ result: Result<T, E>) -> String? {
        if case .failure(let error) = result { return "\(error)" }
        return nil
    }

    /// The registrations of `numbers` in lists of `listSize`, each handed to `send`, with
    /// `listsInFlight` lists not yet done at once; the first failure named by `done` stops it.
    func inLists(_ numbers: Range<Int>, failing what: String,
                         _ send: ([TokenOperation], _ done: @escaping @Sendable (String?) -> Void) -> Void) throws -> Registered {
        let window = DispatchSemaphore(value: options.listsInFlight)
        let group = DispatchGroup()
        let failure = Mutex<String?>(nil)
        let now = SystemClock().now()
        let start = monotonicNanoseconds()
        for first in stride(from: numbers.lowerBound, to: numbers.upperBound, by: options.listSize) {
            if let error = failure.withLock({ $0 }) { throw LoadError("\(what) failed: \(error)") }
            window.wait()
            group.enter()
            send((first..<min(numbers.upperBound, first + options.listSize)).map { registration($0, at: now) }) { error in
                if let error { failure.withLock { $0 = $0 ?? error } }
                window.signal()
                group.leave()
            }
        }
        group.wait()
        if let error = failure.withLock({ $0 }) { throw LoadError("\(what) failed: \(error)") }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        return Registered(seconds: seconds, rate: Double(numbers.count) / seconds)
    }

    /// Walks every team's audience in the file, pages of 1,000, as a kickoff's fan-out does.
    func walkEveryFollow(path: String) throws -> (tokens: Int, seconds: Double) {
        let reader = try SQLiteTokenReader(path: path)
        defer { reader.close() }
        let start = monotonicNanoseconds()
        var count = 0
        for team in 0..<options.follows {
            var cursor: String?
            while case let page = try reader.pushToStartTokens(following: "team:\(team)", after: cursor, limit: 1_000, environment: nil), !page.isEmpty {
                count += page.count
                cursor = page.last?.token
            }
        }
        return (count, Double(monotonicNanoseconds() - start) / 1e9)
    }

    // MARK: The layout not chosen

    /// `tokens` tokens as one subject each (the registration, about the size of its log entry)
    /// and one subject per follow, in a stream keeping each subject's last message, on a cluster
    /// of their own; the servers' memory and disk per token.
    func subjectLayoutCost(tokens: Int) async throws -> (memoryPerToken: Double, memoryPerTokenAfterRestart: Double, diskPerToken: Double) {
        let cluster = try await NATSCluster.start(size: 3)
        let before = ServersReading(cluster)
        let loop = EventLoop.start(name: "subject-layout")
        let window = 512
        let connection = try NATSConnection.connect(NATSSettings(servers: cluster.urls, name: "subject-layout", maximumPendingPublishes: window * 2),
                                                    loop: loop, events: { _ in })
        let jetStream = try JetStream(connection)
        try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureStream(.init(name: "SUBJECT_LAYOUT", subjects: ["layout.>"], replicas: options.replicas, maximumMessagesPerSubject: 1))
        }
        let slots = DispatchSemaphore(value: window)
        let group = DispatchGroup()
        let failure = Mutex<String?>(nil)
        let now = SystemClock().now()
        for n in 0..<tokens {
            guard case .registerToken(let record) = registration(n, at: now) else { continue }
            let value = RegistryEntry([.registerToken(record)])!.binaryEncoded
            let messages = [("layout.token.\(record.token)", value)] + record.follows.map {
                ("layout.follow.\($0.replacingOccurrences(of: ":", with: "_")).\(record.token)", [UInt8(1)])
            }
            for (subject, payload) in messages {
                slots.wait()
                group.enter()
                jetStream.publish(payload, to: subject, loop: loop) { result in
                    if case .failure(let error) = result { failure.withLock { $0 = $0 ?? "\(error)" } }
                    slots.signal()
                    group.leave()
                }
            }
            if n % 10_000 == 0, let error = failure.withLock({ $0 }) { throw LoadError("publishing the subject layout failed: \(error)") }
        }
        group.wait()
        if let error = failure.withLock({ $0 }) { throw LoadError("publishing the subject layout failed: \(error)") }
        connection.close()
        loop.stopAndWait()
        try await Task.sleep(for: .seconds(5))
        let after = ServersReading(cluster)
        await cluster.kill(0)
        try await cluster.restart(0)
        try await Task.sleep(for: .seconds(5))
        let restarted = ServersReading(cluster).memory[0]
        await cluster.stop()
        let count = Double(tokens)
        return (Double(zip(after.memory, before.memory).map { $0 - $1 }.max() ?? 0) / count, Double(restarted - before.memory[0]) / count,
                Double(zip(after.disk, before.disk).map { $0 - $1 }.max() ?? 0) / count)
    }

    // MARK: Readings

    /// Each node's resident memory and the bytes of its JetStream directory, now.
    struct ServersReading {
        var memory: [Int]
        var disk: [Int]

        init(_ cluster: NATSCluster) {
            let running = Dictionary(uniqueKeysWithValues: cluster.runningProcesses.map { ($0.name, $0.pid) })
            memory = cluster.nodes.map { running[$0.name].map(processResidentBytes(pid:)) ?? 0 }
            disk = cluster.nodes.map { directoryBytes(cluster.directory + "/" + $0.name) }
        }
    }

    func fileBytes(_ path: String) -> Int {
        ["", "-wal"].map { ((try? FileManager.default.attributesOfItem(atPath: path + $0))?[.size] as? Int) ?? 0 }.reduce(0, +)
    }

    func megabytes(_ bytes: Int) -> String { String(format: "%.0f MB", Double(bytes) / 1_048_576) }
}
