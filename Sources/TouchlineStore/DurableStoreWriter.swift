/// What every store writer shares, whatever it writes: health, queue, statistics and close.
///
/// The contract every implementation keeps (``ChannelStoreWriter`` and ``PersonalStoreWriter``
/// add their own writes on top):
///
/// - **Durability before completion.** A write's completion runs only once the write is durable
///   (for SQLite: `COMMIT` returned), or has failed; a reader opened after the completion ran
///   sees it. A write that failed changed nothing.
/// - **All or nothing.** A batch (a `WriteBatch`, a list of `TokenOperation`s) commits whole or
///   not at all: an operation that fails in the middle undoes the ones before it, and only that
///   batch: batches submitted alongside it still commit.
/// - **Order.** Batches submitted from one thread commit in submission order; a later batch sees
///   what an earlier one wrote, and completions run in that order.
/// - **Thread of completions.** Completions run on the writer's own thread or queue, never on the
///   submitter's and never inside `submit`: hop back to your loop with `EventLoop.execute`, and
///   never wait in a completion for another write (it would wait for its own thread).
/// - **Health.** A storage failure (``StoreError/isStorageFailure``) makes ``health`` failing;
///   the next commit that succeeds (the writer probes by itself while failing) makes it healthy.
/// - **Close.** ``close()`` commits what is queued and returns once it is; later submits fail
///   with ``StoreError/closed`` (asynchronously, like any completion).
///
/// Every property is cheap and may be read from any thread.
public protocol DurableStoreWriter: AnyObject, Sendable {
    /// Whether writes currently succeed (see ``StoreHealth``).
    var health: StoreHealth { get }
    /// False once ``close()`` was called.
    var isOpen: Bool { get }
    /// Batches waiting to be committed (not counting those being committed): a gauge for metrics.
    var queueDepth: Int { get }
    /// Commits and batches so far.
    var statistics: StoreWriterStatistics { get }
    /// Commits what is queued, then stops; later submits fail with ``StoreError/closed``.
    func close()
}
