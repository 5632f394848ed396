import Measurements
import Synchronization
import TouchlineRuntime

/// What every loop of one server shares: immutable configuration and keys, plus the
/// thread-safe registry and recording.
final class MockAPNsShared: Sendable {
    let configuration: MockAPNsConfiguration
    let app: MockAPNsApp
    let verifier: ProviderTokenVerifier
    let tls: TLSContext
    let registry: MockAPNsRegistry
    let recording: MockAPNsRecording
    /// Nil unless ``MockAPNsConfiguration/arrivalLatencyField`` is set.
    let timestampField: MockAPNsTimestampField?
    private let connectionNumbers = Atomic(0)

    init(configuration: MockAPNsConfiguration, tls: TLSContext) throws(MockAPNsSetupError) {
        self.configuration = configuration
        app = MockAPNsApp(bundleID: configuration.bundleID,
                          startTimestamps: configuration.startTimestampTolerance.map { StartTimestampRule(tolerance: $0, clock: configuration.clock) })
        verifier = try ProviderTokenVerifier(teamID: configuration.teamID, keys: configuration.keys)
        self.tls = tls
        registry = try MockAPNsRegistry(channelLimit: configuration.channelLimit, unregisteredTokens: configuration.faults.unregisteredTokens,
                                        since: configuration.clock.now(), channelsFile: configuration.channelsFile)
        recording = MockAPNsRecording(capacity: configuration.recordingCapacity)
        timestampField = configuration.arrivalLatencyField.map(MockAPNsTimestampField.init(name:))
    }

    /// 1, 2, 3... in accept order across all loops.
    func nextConnectionNumber() -> Int {
        connectionNumbers.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// `{"reason":"..."}` for every reason, built once.
    private static let errorBodies: [MockAPNsReason: [UInt8]] = Dictionary(uniqueKeysWithValues: MockAPNsReason.allCases.map {
        ($0, Array("{\"reason\":\"\($0.rawValue)\"}".utf8))
    })

    static func errorBody(_ reason: MockAPNsReason) -> [UInt8] { errorBodies[reason]! }
}

/// One event loop of the server and the connections it owns. Loop-confined.
final class MockAPNsWorker: @unchecked Sendable {
    let loop: EventLoop
    let shared: MockAPNsShared
    let counters = MockAPNsCounterShard()
    let arrivals: MockAPNsArrivalShard
    private var connections: [ObjectIdentifier: MockAPNsConnection] = [:]

    /// `arrivalPeriod`: the measuring period the server's arrival report starts with.
    init(loop: EventLoop, shared: MockAPNsShared, arrivalPeriod: MeasurementPeriod) {
        self.loop = loop
        self.shared = shared
        arrivals = MockAPNsArrivalShard(period: arrivalPeriod)
    }

    /// Takes over an accepted socket (on this worker's loop).
    func adopt(socket fd: Int32, port: MockAPNsPort) {
        let connection = MockAPNsConnection(number: shared.nextConnectionNumber(), port: port, worker: self)
        guard connection.start(socket: fd) else { return }
        connections[ObjectIdentifier(connection)] = connection
        counters.countConnection()
    }

    func connectionClosed(_ connection: MockAPNsConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }

    /// Closes every connection (on this worker's loop); used when the server stops.
    func closeAll() {
        for connection in connections.values { connection.close() }
    }
}
