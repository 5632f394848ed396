import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime

/// Keeps the token registry's log short while this gateway holds partition 0 (docs/cluster.md,
/// "Compacting the token registry"): every ``interval``, once its copy has applied
/// `entriesBetweenSnapshots` entries past the newest snapshot it knows of, it compacts
/// (``SharedTokenRegistry/compact(_:fence:)``) under partition 0's fence, on a thread of its own
/// (the reads and writes block). Any gateway may be the compactor; a paused one wakes without
/// the hold and writes nothing.
///
/// Threads: confined to `loop` (the store loop) but for the compaction's own thread, whose
/// outcome comes back through the loop's `execute`.
final class RegistryCompactor: @unchecked Sendable {
    static let interval: Duration = .seconds(2)

    private let registry: SharedTokenRegistry
    private let fences: PartitionFences
    private let settings: RegistryCompactionSettings
    private let loop: EventLoop
    private let log: GatewayLog
    // Confined to the loop.
    private var timer: LoopTimer?
    private var isCompacting = false
    private var isStopped = false
    /// The newest snapshot's sequence as last seen: no request is made before the copy is far past it.
    private var knownSnapshot: UInt64 = 0

    init(registry: SharedTokenRegistry, fences: PartitionFences, settings: RegistryCompactionSettings, loop: EventLoop, log: GatewayLog) {
        self.registry = registry
        self.fences = fences
        self.settings = settings
        self.loop = loop
        self.log = log
    }

    /// Starts the rounds. On the loop.
    func start() {
        timer = LoopTimer(loop: loop) { [weak self] in self?.round() }
        timer?.schedule(after: Self.interval)
    }

    /// No round starts after this (one running ends by itself). On the loop.
    func stop() {
        isStopped = true
        timer?.cancel()
    }

    private func round() {
        guard !isStopped else { return }
        guard !isCompacting, let held = fences.current(of: 0), registry.appliedSequence >= knownSnapshot + settings.entriesBetweenSnapshots else {
            timer?.schedule(after: Self.interval)
            return
        }
        isCompacting = true
        let registry = registry, settings = settings, fence = fences.fence(of: 0, held)
        DedicatedThread.start(name: "touchline-registry-compaction") { [weak self] in
            let outcome = Result { try registry.compact(settings, fence: fence) }
            self?.loop.execute { [weak self] in self?.finish(outcome) }
        }
    }

    private func finish(_ outcome: Result<RegistryCompactionOutcome, any Error>) {
        isCompacting = false
        switch outcome {
        case .success(.notDue(let newest)): knownSnapshot = newest
        case .success(.compacted(let sequence, let parts, let trimmedBelow)):
            knownSnapshot = sequence
            log.info("token registry snapshot at log sequence \(sequence) stored in \(parts) part(s)"
                     + (trimmedBelow.map { "; the log trimmed below \($0)" } ?? ""))
        case .success(.fenced), .success(.lostRace): break
        case .failure(let error): log.warning("compacting the token registry failed: \(error); trying again in \(Self.interval)")
        }
        if !isStopped { timer?.schedule(after: Self.interval) }
    }
}
