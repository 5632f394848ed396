import Dispatch
import Synchronization
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// The order every cluster personal store keeps (``SharedTokenRegistry``, ``PartitionedTokenStore``):
/// a list's registry part goes to the cluster, the rest of it to the gateway's own file, and the
/// list is one write to its submitter.
///
/// - **The file's rules first**: a list with both parts has its file part checked before its
///   registry part is logged, so a list the file refuses changes nothing.
/// - **Order**: a list's file part is committed only once its registry part is done and every
///   earlier list's file part is handed on (a job checkpoint never overtakes an earlier one);
///   lists complete in submission order. Registry parts are logged at once, one after the
///   other, and pipeline.
/// - The store says how a registry part is logged (`logRegistry`) and reports it with
///   ``registryDone(_:_:)``.
///
/// Confined to `loop` but for ``submit(_:completion:logRegistry:)``'s admission and the
/// writer-state properties, which any thread may read.
final class RegistryListQueue: @unchecked Sendable {
    /// A submitted list until it completes. Touched only on the loop.
    final class PendingList: @unchecked Sendable {
        let registry: RegistryEntry?
        let local: [TokenOperation]
        let completion: @Sendable (Result<TokenWriteSummary, StoreError>) -> Void
        var acknowledgedAt: ContinuousClock.Instant?
        var registrySummary: TokenWriteSummary?
        var handedToFile = false
        var result: Result<TokenWriteSummary, StoreError>?

        init(registry: RegistryEntry?, local: [TokenOperation], completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
            self.registry = registry
            self.local = local
            self.completion = completion
        }

        var waitsForRegistry: Bool { registry != nil && registrySummary == nil && result == nil }
    }

    /// The gateway's own personal file: everything not in the cluster.
    let local: StoreWriter
    let loop: EventLoop
    private let clock: any WallClock
    let control = Mutex(WriterState())

    // Confined to `loop`.
    private(set) var lists: [PendingList] = []
    private var closeWaiters: [DispatchSemaphore] = []

    init(local: StoreWriter, loop: EventLoop, clock: any WallClock) {
        self.local = local
        self.loop = loop
        self.clock = clock
    }

    var isOpen: Bool { control.withLock { !$0.closed } }
    var queueDepth: Int { control.withLock { $0.queued } + local.queueDepth }
    var statistics: StoreWriterStatistics { control.withLock { $0.statistics } }

    /// Admits `operations` as one list (refused with ``StoreError/closed`` once closed), then on
    /// the loop hands its registry part to `logRegistry`, after the file's check when the list
    /// has a file part too.
    func submit(_ operations: [TokenOperation], completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void,
                logRegistry: @escaping @Sendable (RegistryEntry, PendingList) -> Void) {
        let admitted = control.withLock { $0.admit() }
        loop.execute { [self] in
            guard admitted else { return completion(.failure(.closed)) }
            control.withLock { $0.started() }
            let shared = operations.filter(\.isRegistryOperation)
            let list = PendingList(registry: shared.isEmpty ? nil : RegistryEntry(shared), local: operations.filter { !$0.isRegistryOperation },
                                   completion: completion)
            lists.append(list)
            guard let entry = list.registry else { return advance() }
            guard !list.local.isEmpty else { return logRegistry(entry, list) }
            local.check(list.local) { [self] checked in
                loop.execute { [self] in
                    switch checked {
                    case .success: logRegistry(entry, list)
                    case .failure(let error):
                        list.result = .failure(error)
                        advance()
                    }
                }
            }
        }
    }

    /// `list`'s registry part is done: logged with what it changed, or failed (failing the list).
    func registryDone(_ list: PendingList, _ result: Result<TokenWriteSummary, StoreError>) {
        switch result {
        case .success(let summary): list.registrySummary = summary
        case .failure(let error): list.result = .failure(error)
        }
        advance()
    }

    /// Hands lists to the file in order (none past one still waiting for its registry part),
    /// then completes the finished lists at the head.
    func advance() {
        for list in lists where list.result == nil {
            if list.waitsForRegistry { break }
            guard !list.handedToFile else { continue }
            list.handedToFile = true
            let registered = list.registrySummary?.tokensDeactivated ?? 0
            guard !list.local.isEmpty else {
                list.result = .success(TokenWriteSummary(tokensDeactivated: registered))
                continue
            }
            local.submit(summarizing: list.local) { [self] result in
                loop.execute { [self] in
                    list.result = result.map { TokenWriteSummary(tokensDeactivated: $0.tokensDeactivated + registered) }
                    advance()
                }
            }
        }
        while let head = lists.first, let result = head.result {
            lists.removeFirst()
            control.withLock { $0.record(result, at: clock.now()) }
            head.completion(result)
        }
        if lists.isEmpty {
            closeWaiters.forEach { $0.signal() }
            closeWaiters = []
        }
    }

    /// Refuses later lists and waits until the submitted ones completed. Blocking: off the loop
    /// (on it, only refuses).
    func closeAndWait() {
        control.withLock { $0.close() }
        guard !loop.inEventLoop else { return }
        let waiter = try? loop.sync { [self] () -> DispatchSemaphore? in
            guard !lists.isEmpty else { return nil }
            let semaphore = DispatchSemaphore(value: 0)
            closeWaiters.append(semaphore)
            return semaphore
        }
        waiter?.wait()
    }
}
