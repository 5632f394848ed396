import CLibevent
import CShims
import Foundation
import Synchronization

/// One libevent `event_base` driven by one thread.
///
/// **Ownership rule.** Every connection, timer, watcher and piece of mutable state created on a
/// loop belongs to that loop and is touched only from its thread. Such types are marked
/// `@unchecked Sendable` so they can be captured by closures that `execute` runs on their loop,
/// never to be used from elsewhere. The one way into a loop from another thread is
/// ``execute(_:)``: a lock-protected mailbox drained on the loop after an `event_active` wake-up.
/// Nothing else crosses threads.
public final class EventLoop: @unchecked Sendable {
    public let name: String
    /// The underlying `event_base`; use only on the loop's thread.
    public let base: OpaquePointer
    private var wakeEvent: OpaquePointer?
    private var dns: OpaquePointer?

    private struct Mailbox {
        var jobs: [@Sendable () -> Void] = []
        var thread: pthread_t?
        var stopped = false
    }
    private let mailbox = Mutex(Mailbox())
    private let finished = DispatchSemaphore(value: 0)
    /// The thread ``start(name:)`` made, until ``stopAndWait()`` joins it: a process may exit
    /// once its loops are stopped, and a loop thread still unwinding then (its thread-local
    /// destructors, OpenSSL's among them) would race the exit's clean-up of the same memory.
    private let ownThread = Mutex<pthread_t?>(nil)

    /// One-time process setup for loops: libevent locking, libevent's messages into the JSON log
    /// (``LibeventLog``), and SIGPIPE ignored so that writing to a socket the peer has closed
    /// fails with EPIPE instead of killing the process.
    private static let threadingEnabled: Bool = {
        signal(SIGPIPE, SIG_IGN)
        LibeventLog.installDefault()
        return evthread_use_pthreads() == 0
    }()

    /// Creates a loop; it does nothing until ``run()`` is called on some thread (or use ``start(name:)``).
    public init(name: String) {
        precondition(EventLoop.threadingEnabled, "libevent pthreads support is unavailable")
        self.name = name
        guard let base = event_base_new() else { fatalError("event_base_new failed") }
        self.base = base
        let context = Unmanaged.passUnretained(self).toOpaque()
        wakeEvent = event_new(base, -1, Int16(EV_PERSIST), { _, _, ctx in
            Unmanaged<EventLoop>.fromOpaque(ctx!).takeUnretainedValue().drainMailbox()
        }, context)
        event_add(wakeEvent, nil)
    }

    deinit {
        // Never stopped and joined (the loop's own thread may be dropping the last reference).
        ownThread.withLock { if let thread = $0 { pthread_detach(thread) } }
        if let dns { evdns_base_free(dns, 0) }
        if let wakeEvent { event_free(wakeEvent) }
        event_base_free(base)
    }

    /// Creates a loop and runs it on a new thread; returns once the thread is running it.
    public static func start(name: String) -> EventLoop {
        let loop = EventLoop(name: name)
        let started = DispatchSemaphore(value: 0)
        let body = Unmanaged.passRetained(ThreadBody {
            nameCurrentThread(name)
            loop.run(onStart: { started.signal() })
        }).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, 1 << 22)
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, { body in
            Unmanaged<ThreadBody>.fromOpaque(body!).takeRetainedValue().run()
            return nil
        }, body)
        guard status == 0 else { fatalError("cannot start the thread of event loop \(name): \(String(cString: strerror(status)))") }
        loop.ownThread.withLock { $0 = thread }
        started.wait()
        return loop
    }

    /// Runs the loop on the calling thread until ``stop()``.
    public func run() { run(onStart: {}) }

    /// Lowers the CPU priority of the loop's thread to `niceness` (0 to 19; Linux schedules
    /// threads one by one), so that under CPU contention the other loops run first. Lowering
    /// needs no privilege. Returns false if the system refused.
    public func lowerThreadPriority(niceness: Int32) throws -> Bool {
        try sync { lowerCurrentThreadPriority(niceness: niceness) }
    }

    /// Asks the kernel for short time slices on the loop's thread (see
    /// ``requestCurrentThreadSlice(_:)``): a loop on the path of a goal then preempts background
    /// work as soon as it wakes. Returns false if the system refused.
    public func requestShortSlices(_ slice: Duration) throws -> Bool {
        try sync { requestCurrentThreadSlice(slice) }
    }

    private func run(onStart: () -> Void) {
        mailbox.withLock { $0.thread = pthread_self() }
        onStart()
        // A loop that fails (its epoll descriptor closed under it, say) would leave everything it
        // owns frozen and every job handed to it unrun: that must not pass quietly.
        if event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY) < 0 {
            fatalError("event loop \(name) failed: \(String(cString: strerror(errno)))")
        }
        drainMailbox(thenStop: true)
        finished.signal()
    }

    /// True on the loop's own thread.
    public var inEventLoop: Bool {
        mailbox.withLock { m in m.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// A loop that has left ``run()``: a job handed to it now would never run.
    public struct Stopped: Error, CustomStringConvertible {
        public let loop: String
        public var description: String { "event loop \(loop) has stopped" }
    }

    /// Runs `job` on the loop's thread, soon. Safe from any thread; jobs run in submission order.
    /// Once the loop has stopped, `job` is dropped (``sync(_:)`` and ``submit(_:)`` throw instead).
    public func execute(_ job: @escaping @Sendable () -> Void) {
        _ = enqueue(job)
    }

    /// Hands `job` to the mailbox, waking the loop if it was empty; false once the loop has stopped.
    private func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, wasEmpty) = mailbox.withLock { m -> (Bool, Bool) in
            if m.stopped { return (false, false) }
            m.jobs.append(job)
            return (true, m.jobs.count == 1)
        }
        if wasEmpty { event_active(wakeEvent, EV_READ, 0) }
        return accepted
    }

    /// Runs `body` on the loop and returns its result to an async caller (control paths and tests).
    public func submit<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = enqueue { continuation.resume(with: Result { try body() }) }
            if !accepted { continuation.resume(throwing: Stopped(loop: name)) }
        }
    }

    /// Runs `body` on the loop and waits for it on the calling thread (never call from the loop itself).
    public func sync<T>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        precondition(!inEventLoop, "EventLoop.sync called on its own loop")
        let box = UncheckedBox<Result<T, Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let accepted = enqueue {
            box.value = Result { try body() }
            done.signal()
        }
        // A stopped loop would never run the job: waiting for it would wait for ever.
        guard accepted else { throw Stopped(loop: name) }
        done.wait()
        return try box.value!.get()
    }

    /// Runs the jobs in the mailbox until it is empty; with `thenStop` (the loop's last drain),
    /// the mailbox is closed in the same step that finds it empty, so no job is left behind.
    private func drainMailbox(thenStop: Bool = false) {
        while true {
            let jobs = mailbox.withLock { m -> [@Sendable () -> Void] in
                let j = m.jobs
                m.jobs.removeAll(keepingCapacity: true)
                if j.isEmpty, thenStop {
                    m.stopped = true
                    m.thread = nil
                }
                return j
            }
            if jobs.isEmpty { return }
            for job in jobs { job() }
        }
    }

    /// Asks the loop to stop after the jobs already queued; returns at once, false if it has
    /// stopped already.
    @discardableResult
    public func stop() -> Bool {
        enqueue { [self] in event_base_loopbreak(self.base) }
    }

    /// Stops the loop and waits until its thread has left ``run()`` (at once if it already has)
    /// and, for a loop of ``start(name:)``, until that thread has ended.
    public func stopAndWait() {
        if stop() {
            finished.wait()
            // For any other caller waiting too.
            finished.signal()
        }
        // Held while joining, so a second caller also returns only once the thread has ended.
        ownThread.withLock { thread in
            guard let joined = thread else { return }
            pthread_join(joined, nil)
            thread = nil
        }
    }

    /// The loop's asynchronous DNS resolver, created on first use. Loop thread only.
    ///
    /// No answers are cached, so every new connection does a fresh lookup, as APNs asks.
    public var dnsBase: OpaquePointer {
        if let dns { return dns }
        let created = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE)!
        evdns_base_load_hosts(created, nil)
        dns = created
        return created
    }
}

/// What a loop's thread runs, handed through `pthread_create`'s context pointer.
private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// A mutable box for handing a value between threads under an external happens-before
/// (a semaphore or the loop's mailbox lock).
final class UncheckedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
