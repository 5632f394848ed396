import NATS
import TouchlineRuntime

/// How full each stream and bucket of the cluster is against its limit, for `/metrics`
/// (`touchline_cluster_stream_bytes` and `touchline_cluster_stream_limit_bytes`; the alerts
/// `TouchlineClusterStreamFilling` and `TouchlineClusterStreamNearlyFull` fire on their ratio).
///
/// Threads: the readings belong to the ingest loop, which `/metrics` reads them on. Every
/// ``interval`` the streams' states are read on a thread of their own (each is a JetStream API
/// request, which blocks) and handed back through the loop's `execute`.
final class ClusterStorageGauge: @unchecked Sendable {
    /// One stream as last read: what it holds, and the limit the gateways gave it.
    struct Reading: Sendable, Equatable {
        let stream: String
        let bytes: UInt64
        let messages: UInt64
        let limitBytes: Int
    }

    static let interval: Duration = .seconds(15)

    private let jetStream: any JetStreamClient
    private let streams: [(name: String, limitBytes: Int)]
    private let loop: EventLoop
    // Confined to the loop.
    private var timer: LoopTimer?
    private(set) var readings: [Reading] = []
    private var isReading = false
    private var isStopped = false

    init(jetStream: any JetStreamClient, streams: [(name: String, limitBytes: Int)], loop: EventLoop) {
        self.jetStream = jetStream
        self.streams = streams
        self.loop = loop
    }

    /// Reads now, then every ``interval`` until ``stop()``. On the loop.
    func start() {
        timer = LoopTimer(loop: loop) { [weak self] in self?.read() }
        read()
    }

    func stop() {
        isStopped = true
        timer?.cancel()
    }

    /// A stream that cannot be read this round (no answer, or not made yet) keeps no reading
    /// until it can: a stale figure would hide a stream filling up.
    private func read() {
        guard !isReading, !isStopped else { return }
        isReading = true
        let jetStream = jetStream, streams = streams, loop = loop
        DedicatedThread.start(name: "touchline-storage-gauge") { [weak self] in
            let readings = streams.compactMap { stream -> Reading? in
                guard let state = try? jetStream.streamState(stream.name) else { return nil }
                return Reading(stream: stream.name, bytes: state.bytes, messages: state.messages, limitBytes: stream.limitBytes)
            }
            loop.execute { [weak self] in self?.finishRound(readings) }
        }
    }

    private func finishRound(_ readings: [Reading]) {
        self.readings = readings
        isReading = false
        if !isStopped { timer?.schedule(after: Self.interval) }
    }
}
