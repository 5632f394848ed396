import Foundation
import Measurements
import Synchronization
import TouchlineCore
import TouchlineRuntime

/// A strict stand-in for APNs: HTTP/2 over TLS on two ports (pushes and channel management),
/// validating every request as APNs documents it and answering with APNs' status codes and
/// reasons, plus fault injection and a recording for tests.
///
/// Threading: one loop accepts on both ports and deals the sockets out round-robin to
/// ``MockAPNsConfiguration/threads`` worker loops (the first loop is also a worker); each
/// connection then lives on one loop. All methods are safe from any thread (not from the
/// server's own loops).
public final class MockAPNsServer: Sendable {
    /// Where a started server listens.
    public struct Addresses: Sendable {
        public var host: String
        public var pushPort: Int
        public var managementPort: Int
        /// The CA that signed the server certificate when the mock generated one, else nil.
        public var caFile: String?
    }

    private struct Running {
        var loops: [EventLoop]
        var workers: [MockAPNsWorker]
        var listeners: [TCPListener]
        var addresses: Addresses
    }

    /// What inspection reads; kept after ``stop()`` so tests and the exit report can look back.
    private struct Observed {
        var shared: MockAPNsShared
        var counters: [MockAPNsCounterShard]
        var arrivals: [MockAPNsArrivalShard]
    }

    public let configuration: MockAPNsConfiguration
    private let running = Mutex<Running?>(nil)
    private let observed = Mutex<Observed?>(nil)

    /// Checks the configuration; keys and certificates are read by ``start()``.
    public init(configuration: MockAPNsConfiguration) throws(MockAPNsSetupError) {
        try configuration.validate()
        self.configuration = configuration
    }

    /// Loads keys and certificates (generating a development CA and certificate if none is
    /// configured), binds both ports and starts serving. Returns the bound ports.
    @discardableResult
    public func start() throws(MockAPNsSetupError) -> Addresses {
        if let addresses = running.withLock({ $0?.addresses }) { return addresses }
        var certificateFile = configuration.certificateFile
        var privateKeyFile = configuration.privateKeyFile
        var caFile: String?
        if certificateFile == nil {
            let generated = try MockAPNsDevelopmentCertificates.generate(in: MockAPNsDevelopmentCertificates.temporaryDirectory())
            (certificateFile, privateKeyFile, caFile) = (generated.certificateFile, generated.privateKeyFile, generated.caFile)
        }
        let tls: TLSContext
        do {
            tls = try TLSContext.server(TLSConfiguration(certificateFile: certificateFile, privateKeyFile: privateKeyFile))
        } catch {
            throw MockAPNsSetupError("\(error)")
        }
        let shared = try MockAPNsShared(configuration: configuration, tls: tls)
        let loops = (0..<configuration.threads).map { EventLoop.start(name: "mock-apns-\($0)") }
        let arrivalPeriod = MeasurementPeriod(startNanoseconds: configuration.clock.now().nanoseconds)
        let workers = loops.map { MockAPNsWorker(loop: $0, shared: shared, arrivalPeriod: arrivalPeriod) }
        let dealer = SocketDealer(workers: workers)
        let host = configuration.host
        let listeners: [TCPListener]
        do {
            listeners = try loops[0].sync {
                [try TCPListener(loop: loops[0], host: host, port: self.configuration.pushPort) { dealer.deal($0, port: .push) },
                 try TCPListener(loop: loops[0], host: host, port: self.configuration.managementPort) { dealer.deal($0, port: .management) }]
            }
        } catch {
            loops.forEach { $0.stopAndWait() }
            if case .socket(let reason) = error as? TransportError { throw MockAPNsSetupError(reason) }
            throw MockAPNsSetupError("\(error)")
        }
        let addresses = Addresses(host: host, pushPort: listeners[0].port, managementPort: listeners[1].port, caFile: caFile)
        running.withLock { $0 = Running(loops: loops, workers: workers, listeners: listeners, addresses: addresses) }
        observed.withLock { $0 = Observed(shared: shared, counters: workers.map(\.counters), arrivals: workers.map(\.arrivals)) }
        return addresses
    }

    /// Stops listening, closes every connection and stops the loops. Harmless when not running.
    public func stop() {
        guard let state = running.withLock({ s -> Running? in defer { s = nil }; return s }) else { return }
        try? state.loops[0].sync { state.listeners.forEach { $0.close() } }
        for worker in state.workers {
            try? worker.loop.sync { worker.closeAll() }
        }
        state.loops.forEach { $0.stopAndWait() }
    }

    deinit { stop() }

    /// The bound addresses while running.
    public var addresses: Addresses? { running.withLock { $0?.addresses } }

    // MARK: - Inspection (tests)

    /// Answer counters summed over all loops (also after ``stop()``).
    public func counters() -> MockAPNsCounters {
        var total = MockAPNsCounters()
        for shard in observed.withLock({ $0?.counters ?? [] }) { total.merge(shard.snapshot) }
        return total
    }

    /// The recorded requests, oldest first (at most ``MockAPNsConfiguration/recordingCapacity``).
    public func recordedRequests() -> [MockAPNsRecordedRequest] {
        observed.withLock { $0?.shared.recording }?.snapshot ?? []
    }

    /// Forgets recorded requests and counters.
    public func resetRecording() {
        guard let state = observed.withLock({ $0 }) else { return }
        state.shared.recording.removeAll()
        state.counters.forEach { $0.reset() }
    }

    /// What arrived since the last call (or the start), merged over the worker loops: answers by
    /// status per endpoint, accepted requests per second by endpoint and priority, and their
    /// latencies when ``MockAPNsConfiguration/arrivalLatencyField`` is set. Starts a new period
    /// (also after ``stop()``); empty before ``start()``.
    public func takeArrivalReport() -> ArrivalReport {
        let now = configuration.clock.now().nanoseconds
        let next = MeasurementPeriod(startNanoseconds: now)
        // Under the lock, so that two callers cannot split the workers between their periods.
        return observed.withLock { observed in
            guard let shards = observed?.arrivals, let first = shards.first else {
                return ArrivalReport(period: next, endNanoseconds: now, endpoints: [])
            }
            var tally = first.take(startingNew: next)
            for shard in shards.dropFirst() { tally.merge(shard.take(startingNew: next)) }
            return tally.report(endNanoseconds: now)
        }
    }

    /// Live channels: id -> message storage policy.
    public func channels() -> [String: Int] {
        observed.withLock { $0?.shared.registry }?.channels ?? [:]
    }

    /// Creates a channel directly (test setup); nil at the channel limit or before ``start()``.
    public func createChannel(storagePolicy: Int) -> String? {
        observed.withLock { $0?.shared.registry }?.createChannel(storagePolicy: storagePolicy)
    }

    /// From now on, answer pushes to `token` with 400 BadDeviceToken, as APNs answers a
    /// well-formed token of the other environment or another app.
    public func disown(token: String) {
        observed.withLock { $0?.shared.registry }?.disown(token)
    }

    /// From now on, answer pushes to `token` with 410 Unregistered and this timestamp.
    public func unregister(token: String, at time: UnixTime? = nil) {
        observed.withLock { $0?.shared.registry }?.unregister(token, at: time ?? configuration.clock.now())
    }
}

/// Hands accepted sockets to workers in turn. Lives on the accepting loop.
private final class SocketDealer: @unchecked Sendable {
    private let workers: [MockAPNsWorker]
    private var next = 0

    init(workers: [MockAPNsWorker]) { self.workers = workers }

    func deal(_ fd: Int32, port: MockAPNsPort) {
        let worker = workers[next % workers.count]
        next += 1
        if next == workers.count { next = 0 }
        if worker === workers[0] {
            worker.adopt(socket: fd, port: port)
        } else {
            worker.loop.execute { worker.adopt(socket: fd, port: port) }
        }
    }
}
