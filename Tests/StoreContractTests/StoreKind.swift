import Foundation
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting
import NATS
import NATSServers
import TouchlineJetStream

/// The implementations every contract suite runs against: one set of tests, run on each, so
/// that a new backend is added here once and held to the same contract.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case inMemory

    var testDescription: String { rawValue }

    /// A fresh, empty store of this kind, on a virtual clock.
    func open(clock: ManualClock = ManualClock()) throws -> StoreUnderTest {
        switch self {
        case .sqlite: try SQLiteStoreUnderTest(clock: clock)
        case .inMemory: InMemoryStoreUnderTest(clock: clock)
        }
    }
}

/// One store as the contract tests see it: its writer, fresh readers of it (for SQLite each a new
/// connection, so what it reads was durable when it was opened), and the failure switch.
protocol StoreUnderTest: AnyObject, Sendable {
    var writer: any ChannelStoreWriter & PersonalStoreWriter { get }
    func channelReader() throws -> any ChannelStoreReader
    func personalReader() throws -> any PersonalStoreReader
    func outboxReader() throws -> any WebhookOutboxReader
    /// Every commit fails as on a full disk, until ``restoreStorage()``.
    func failStorage()
    func restoreStorage()
    /// Closes the writer; the store's contents stay for ``reopen()``.
    func close()
    /// A new writer on what was committed (after ``close()``), as after a restart.
    func reopen() throws
}

final class SQLiteStoreUnderTest: StoreUnderTest, @unchecked Sendable {
    let directory: String
    var path: String { directory + "/store.sqlite" }
    var fault: String { directory + "/disk-full" }
    private(set) var writer: any ChannelStoreWriter & PersonalStoreWriter
    private let clock: ManualClock

    init(clock: ManualClock) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-contract-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.clock = clock
        writer = try StoreWriter(path: directory + "/store.sqlite", faultFile: directory + "/disk-full", clock: clock)
    }

    deinit {
        writer.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func channelReader() throws -> any ChannelStoreReader { try SQLiteChannelReader(path: path) }
    func personalReader() throws -> any PersonalStoreReader { try SQLiteTokenReader(path: path) }
    func outboxReader() throws -> any WebhookOutboxReader { try SQLiteWebhookReader(path: path) }
    func failStorage() { #expect(FileManager.default.createFile(atPath: fault, contents: Data())) }
    func restoreStorage() { try? FileManager.default.removeItem(atPath: fault) }
    func close() { writer.close() }
    func reopen() throws { writer = try StoreWriter(path: path, faultFile: fault, clock: clock) }
}

final class InMemoryStoreUnderTest: StoreUnderTest, @unchecked Sendable {
    private var store: InMemoryStore
    var writer: any ChannelStoreWriter & PersonalStoreWriter { store }

    init(clock: ManualClock) { store = InMemoryStore(name: "contract-store", clock: clock) }

    deinit { store.close() }

    func channelReader() throws -> any ChannelStoreReader { store.openReader() }
    func personalReader() throws -> any PersonalStoreReader { store.openReader() }
    func outboxReader() throws -> any WebhookOutboxReader { store.openReader() }
    func failStorage() { store.failStorage() }
    func restoreStorage() { store.restoreStorage() }
    func close() { store.close() }
    func reopen() throws { store = store.reopened() }
}

// MARK: Records

let t0 = UnixTime(seconds: 1_767_225_600)

func channel(_ id: String, status: ChannelStatus = .active, apnsID: String? = nil) -> ChannelRecord {
    ChannelRecord(id: id, apnsChannelID: apnsID, storagePolicy: .mostRecent, policyJSON: #"{"minInterval":2}"#,
                  status: status, createdAt: t0, contentState: Array(#"{"home":0,"away":0}"#.utf8))
}

func event(_ channelID: String, _ seq: Int64) -> StoredEvent {
    StoredEvent(channelID: channelID, seq: seq, receivedAt: t0 + .seconds(seq), body: Array(#"{"seq":\#(seq)}"#.utf8))
}

/// A device token of 64 hex digits from a number (ascending numbers sort as ascending tokens).
func hexToken(_ n: Int) -> String {
    let digits = String(n, radix: 16)
    return String(repeating: "0", count: 64 - digits.count) + digits
}

func job(_ id: String, at: UnixTime = t0, status: PersonalJobStatus = .pending) -> PersonalJobRecord {
    PersonalJobRecord(id: id, createdAt: at, audience: #"{"follows":"team:ARS"}"#, payload: Array(#"{"aps":{}}"#.utf8), status: status)
}

/// Waits for a completion (tests only; never from a completion).
func awaitResult<T: Sendable>(_ start: (@escaping @Sendable (Result<T, StoreError>) -> Void) -> Void) -> Result<T, StoreError> {
    waitForCompletion(start)
}

final class ResultBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Result<T, StoreError>?
    var value: Result<T, StoreError>? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

// MARK: Channel stores

/// The implementations of the channel side: every ``StoreKind``, and the JetStream backend,
/// whose channel store logs batches to a real NATS cluster (one node, started per test).
enum ChannelStoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case inMemory
    case jetStream

    var testDescription: String { rawValue }

    func open(clock: ManualClock = ManualClock()) async throws -> any ChannelStoreUnderTest {
        switch self {
        case .sqlite: try SQLiteStoreUnderTest(clock: clock)
        case .inMemory: InMemoryStoreUnderTest(clock: clock)
        case .jetStream: try await JetStreamStoreUnderTest.start(clock: clock)
        }
    }
}

/// A channel store as the channel contract tests see it (see ``StoreUnderTest``).
protocol ChannelStoreUnderTest: AnyObject, Sendable {
    var channelWriter: any ChannelStoreWriter { get }
    func channelReader() throws -> any ChannelStoreReader
    /// The channel side's webhook outbox.
    func outboxReader() throws -> any WebhookOutboxReader
    func failStorage()
    func restoreStorage()
    func close()
    func reopen() throws
}

extension SQLiteStoreUnderTest: ChannelStoreUnderTest {
    var channelWriter: any ChannelStoreWriter { writer }
}

extension InMemoryStoreUnderTest: ChannelStoreUnderTest {
    var channelWriter: any ChannelStoreWriter { writer }
}

/// The JetStream channel store on a one-node cluster. Its storage fails when the log streams
/// are capped at their current sizes (the servers then refuse every publish, as a full disk
/// would).
final class JetStreamStoreUnderTest: ChannelStoreUnderTest, @unchecked Sendable {
    let cluster: NATSCluster
    let loop: EventLoop
    let connection: NATSConnection
    let jetStream: JetStream
    let layout = ChannelLogLayout(partitioning: ChannelPartitioning(count: 8)!)
    private let clock: ManualClock
    private(set) var store: JetStreamChannelStore

    var channelWriter: any ChannelStoreWriter { store }

    private init(cluster: NATSCluster, loop: EventLoop, connection: NATSConnection, jetStream: JetStream, clock: ManualClock) throws {
        self.cluster = cluster
        self.loop = loop
        self.connection = connection
        self.jetStream = jetStream
        self.clock = clock
        store = try JetStreamChannelStore.open(jetStream: jetStream, layout: layout, replicas: 1, loop: loop, clock: clock)
    }

    static func start(clock: ManualClock) async throws -> JetStreamStoreUnderTest {
        let cluster = try await NATSCluster.start(size: 1)
        let loop = EventLoop.start(name: "contract-jetstream")
        let connection = try cluster.connect(name: "contract", loop: loop)
        return try JetStreamStoreUnderTest(cluster: cluster, loop: loop, connection: connection, jetStream: try JetStream(connection),
                                           clock: clock)
    }

    deinit {
        store.close()
        connection.close()
        loop.stop()
    }

    func channelReader() throws -> any ChannelStoreReader { store.openReader() }
    func outboxReader() throws -> any WebhookOutboxReader { store.openReader() }

    func failStorage() {
        for log in layout.logs {
            let bytes = (try? jetStream.streamState(layout.streamName(of: log)))??.bytes ?? 0
            _ = try? jetStream.ensureStream(.init(name: layout.streamName(of: log), subjects: [layout.subject(of: log)], replicas: 1,
                                                  maximumBytes: Int(max(bytes, 1))))
        }
        let probe = (try? jetStream.streamState(layout.probeStreamName))??.bytes ?? 0
        _ = try? jetStream.ensureStream(.init(name: layout.probeStreamName, subjects: layout.probeSubjects, replicas: 1,
                                              maximumAge: .seconds(60), maximumMessagesPerSubject: 1, duplicateWindow: .seconds(10), maximumBytes: Int(max(probe, 1))))
    }

    func restoreStorage() {
        for log in layout.logs {
            _ = try? jetStream.ensureStream(.init(name: layout.streamName(of: log), subjects: [layout.subject(of: log)], replicas: 1))
        }
        _ = try? jetStream.ensureStream(.init(name: layout.probeStreamName, subjects: layout.probeSubjects, replicas: 1,
                                              maximumAge: .seconds(60), maximumMessagesPerSubject: 1, duplicateWindow: .seconds(10)))
    }

    func close() { store.close() }

    func reopen() throws {
        store = try JetStreamChannelStore.open(jetStream: jetStream, layout: layout, replicas: 1, loop: loop, clock: clock)
    }
}

// MARK: Personal stores

/// The implementations of the personal side: every ``StoreKind``, and the gateway's store on a
/// cluster, whose token registry is a shared JetStream log applied to its own file (one node,
/// started per test).
enum PersonalStoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case inMemory
    case sharedRegistry

    var testDescription: String { rawValue }

    func open(clock: ManualClock = ManualClock()) async throws -> any PersonalStoreUnderTest {
        switch self {
        case .sqlite: try SQLiteStoreUnderTest(clock: clock)
        case .inMemory: InMemoryStoreUnderTest(clock: clock)
        case .sharedRegistry: try await SharedRegistryUnderTest.start(clock: clock)
        }
    }
}

/// A personal store as the personal contract tests see it.
protocol PersonalStoreUnderTest: AnyObject, Sendable {
    var personalWriter: any PersonalStoreWriter { get }
    func personalReader() throws -> any PersonalStoreReader
}

extension SQLiteStoreUnderTest: PersonalStoreUnderTest {
    var personalWriter: any PersonalStoreWriter { writer }
}

extension InMemoryStoreUnderTest: PersonalStoreUnderTest {
    var personalWriter: any PersonalStoreWriter { writer }
}

/// ``SharedTokenRegistry`` on a one-node cluster, over a personal file in a temporary directory.
final class SharedRegistryUnderTest: PersonalStoreUnderTest, @unchecked Sendable {
    let cluster: NATSCluster
    let loop: EventLoop
    let connection: NATSConnection
    let directory: String
    let registry: SharedTokenRegistry

    var personalWriter: any PersonalStoreWriter { registry }
    var path: String { directory + "/personal.sqlite" }

    private init(cluster: NATSCluster, loop: EventLoop, connection: NATSConnection, directory: String, registry: SharedTokenRegistry) {
        self.cluster = cluster
        self.loop = loop
        self.connection = connection
        self.directory = directory
        self.registry = registry
    }

    static func start(clock: ManualClock) async throws -> SharedRegistryUnderTest {
        let cluster = try await NATSCluster.start(size: 1)
        let loop = EventLoop.start(name: "contract-registry")
        let connection = try cluster.connect(name: "contract", loop: loop)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-registry-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = try StoreWriter(path: directory + "/personal.sqlite", clock: clock)
        let registry = try SharedTokenRegistry.open(jetStream: try JetStream(connection), layout: RegistryLogLayout(), replicas: 1, local: file,
                                                    loop: loop, clock: clock)
        return SharedRegistryUnderTest(cluster: cluster, loop: loop, connection: connection, directory: directory, registry: registry)
    }

    deinit {
        registry.close()
        connection.close()
        loop.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func personalReader() throws -> any PersonalStoreReader { try SQLiteTokenReader(path: path) }
}
