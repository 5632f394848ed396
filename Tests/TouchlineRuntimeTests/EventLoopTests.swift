import Foundation
import Synchronization
import Testing
import TouchlineRuntime

@Suite struct EventLoopTests {
    @Test func executeRunsJobsOnTheLoopThreadInOrderFromManyThreads() async throws {
        let loop = EventLoop.start(name: "test-loop")
        defer { loop.stopAndWait() }
        let seen = Mutex<[Int: [Int]]>([:])
        let wrongThread = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { producer in
            for i in 0..<1000 {
                loop.execute {
                    if !loop.inEventLoop { wrongThread.add(1, ordering: .relaxed) }
                    seen.withLock { $0[producer, default: []].append(i) }
                }
            }
        }
        try await loop.submit {}
        #expect(wrongThread.load(ordering: .relaxed) == 0)
        let result = seen.withLock { $0 }
        #expect(result.count == 4)
        for (_, values) in result { #expect(values == Array(0..<1000)) }
    }

    /// A job handed to a loop that has stopped can never run: waiting for it must not hang.
    @Test func aStoppedLoopRefusesWorkInsteadOfLeavingItUnrun() async throws {
        let loop = EventLoop.start(name: "stopped-loop")
        let ranBeforeTheStop = Atomic<Bool>(false)
        loop.execute { ranBeforeTheStop.store(true, ordering: .relaxed) }
        loop.stopAndWait()
        let ranBefore = ranBeforeTheStop.load(ordering: .relaxed)
        #expect(ranBefore, "a job queued before the stop still ran")
        #expect(throws: EventLoop.Stopped.self) { try loop.sync { 1 } }
        await #expect(throws: EventLoop.Stopped.self) { try await loop.submit { 1 } }
        let ranAfterTheStop = Atomic<Bool>(false)
        loop.execute { ranAfterTheStop.store(true, ordering: .relaxed) }
        loop.stopAndWait()
        let ranAfter = ranAfterTheStop.load(ordering: .relaxed)
        #expect(!ranAfter)
    }

    @Test func twoThreadsWaitingForTheStopBothReturn() async throws {
        let loop = EventLoop.start(name: "stopped-twice")
        let blocker = DispatchSemaphore(value: 0)
        loop.execute { blocker.wait() }
        let returned = Atomic<Int>(0)
        let both = DispatchGroup()
        for _ in 0..<2 {
            both.enter()
            Thread {
                loop.stopAndWait()
                returned.add(1, ordering: .relaxed)
                both.leave()
            }.start()
        }
        try await Task.sleep(for: .milliseconds(100))
        blocker.signal()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in both.notify(queue: .global()) { done.resume() } }
        let returnedCount = returned.load(ordering: .relaxed)
        #expect(returnedCount == 2)
    }

    /// A process exits once its loops are stopped. A loop thread still unwinding then (its
    /// thread-local destructors, OpenSSL's among them) races the exit's own clean-up of the same
    /// memory: the mock APNs aborted with "double free" at the end of a long benchmark. So
    /// `stopAndWait` returns only once the thread has ended.
    @Test func stopAndWaitReturnsOnceTheLoopsThreadHasEnded() throws {
        for _ in 0..<50 {
            let loop = EventLoop.start(name: "ending-loop")
            // "PID/task/TID" of the loop's thread.
            let task = try loop.sync { try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self") }
            loop.stopAndWait()
            #expect(!FileManager.default.fileExists(atPath: "/proc/\(task)"), "the loop's thread \(task) still runs after stopAndWait")
        }
    }

    @Test func inEventLoopIsFalseElsewhere() throws {
        let loop = EventLoop.start(name: "test-loop")
        defer { loop.stopAndWait() }
        #expect(!loop.inEventLoop)
        #expect(try loop.sync { loop.inEventLoop })
    }

    @Test func timersFireInDeadlineOrderAndCancelledOnesDoNot() async throws {
        let loop = EventLoop.start(name: "timer-loop")
        defer { loop.stopAndWait() }
        let fired = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let timers = try loop.sync { () -> [LoopTimer] in
            let late = LoopTimer(loop: loop) { fired.withLock { $0.append("late") }; done.signal() }
            let early = LoopTimer(loop: loop) { fired.withLock { $0.append("early") } }
            let cancelled = LoopTimer(loop: loop) { fired.withLock { $0.append("cancelled") } }
            late.schedule(after: .milliseconds(60))
            early.schedule(after: .milliseconds(10))
            cancelled.schedule(after: .milliseconds(20))
            cancelled.cancel()
            return [late, early, cancelled]
        }
        done.wait()
        #expect(fired.withLock { $0 } == ["early", "late"])
        try loop.sync { #expect(!timers[0].isScheduled) }
    }

    /// A timer armed late in a slow loop iteration still waits its whole delay (callers compare
    /// deadlines with their own clock and would find nothing due yet).
    @Test func timerArmedLateInABusyIterationNeverFiresEarly() throws {
        let loop = EventLoop.start(name: "busy-timer-loop")
        defer { loop.stopAndWait() }
        let fired = DispatchSemaphore(value: 0)
        let armedAt = Mutex<ContinuousClock.Instant?>(nil)
        let firedAt = Mutex<ContinuousClock.Instant?>(nil)
        let timer = try loop.sync { () -> LoopTimer in
            let timer = LoopTimer(loop: loop) { firedAt.withLock { $0 = .now }; fired.signal() }
            usleep(80_000)
            armedAt.withLock { $0 = .now }
            timer.schedule(after: .milliseconds(40))
            return timer
        }
        fired.wait()
        let waited = try #require(firedAt.withLock { $0 }) - #require(armedAt.withLock { $0 })
        #expect(waited >= .milliseconds(40), "fired after \(waited)")
        withExtendedLifetime(timer) {}
    }

    @Test func fdWatcherReportsReadability() throws {
        let loop = EventLoop.start(name: "fd-loop")
        defer { loop.stopAndWait() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let readable = DispatchSemaphore(value: 0)
        let reader = fds[0]
        let received = Mutex<[UInt8]>([])
        let watcher = try loop.sync {
            FDWatcher(loop: loop, fd: reader, interest: .readable) { readiness in
                guard readiness.contains(.readable) else { return }
                var byte: UInt8 = 0
                if read(reader, &byte, 1) == 1 { received.withLock { $0.append(byte) } }
                readable.signal()
            }
        }
        var byte: UInt8 = 7
        #expect(write(fds[1], &byte, 1) == 1)
        #expect(readable.wait(timeout: .now() + 5) == .success)
        #expect(received.withLock { $0 } == [7])
        try loop.sync { watcher.stop() }
    }
}
