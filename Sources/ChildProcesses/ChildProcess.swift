import CSpawn
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A program the tests run beside themselves (the `touchline` binary, `openssl`, `nghttpd`,
/// Prometheus, Chromium...), started with `posix_spawn`.
///
/// Why not Foundation's `Process`: on Linux its `run()` scans `/proc/self/fd` with a fixed-size
/// copy of each directory entry that can read past the end of `readdir`'s buffer, and the test
/// process dies of a bad pointer dereference. The more descriptors and threads are open, the more
/// often: a test suite that runs in parallel, with gateways and mocks open in the same process,
/// met it within a few runs. Its `readDataToEndOfFile()` also traps on `EINTR`.
///
/// The child gets exactly the three standard descriptors it is given (every other descriptor of
/// the test process is closed in it, so no child can hold another child's pipe open), default
/// signal dispositions and an empty signal mask, whatever the test process ignores or blocks.
public final class ChildProcess: Sendable {
    /// Where the child's standard input comes from.
    public enum Input: Sendable {
        /// `/dev/null`: the child reads end of file at once.
        case null
        /// A pipe whose writing end is ``input``. Kept open, it is also a lifeline: when the test
        /// process ends, even by a crash, the child reads end of file.
        case pipe
        /// The file at this path.
        case file(String)
        /// These bytes, then end of file: written from a thread of its own, so a child that
        /// answers before it has read them all cannot block on its full output pipe.
        case bytes(Data)
    }

    /// Where the child's standard output or error goes.
    public enum Output: Sendable {
        /// `/dev/null`.
        case null
        /// A pipe whose reading end is ``output`` (or ``errors``); read it, or a chatty child
        /// blocks on a full pipe.
        case pipe
        /// Standard error only: the same pipe or file as standard output.
        case sameAsOutput
        /// This process's own (the terminal, or whatever it was started with).
        case inherit
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or 128 + the signal number as a shell reports it.
        public var status: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let signal): 128 + signal
            }
        }

        public var description: String {
            switch self {
            case .exited(let status): "exit status \(status)"
            case .signalled(let signal): "killed by signal \(signal)"
            }
        }
    }

    /// A start that failed: the executable is missing, or a descriptor could not be made.
    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    public let pid: pid_t
    /// The writing end of standard input, with ``Input/pipe``.
    public let input: PipeEnd?
    /// The reading end of standard output, with ``Output/pipe``.
    public let output: PipeEnd?
    /// The reading end of standard error, with ``Output/pipe``.
    public let errors: PipeEnd?
    /// The termination once reaped: reaped once, by whoever asks first.
    private let reaped = Mutex<Termination?>(nil)

    /// Starts `executable` (a path, or a name looked up on `PATH`) with `arguments`, in
    /// `environment` (nil: the test process's own) and `directory` (nil: the current one).
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
                input: Input = .null, output: Output = .pipe, errors: Output = .sameAsOutput) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The child's ends of the pipes, closed in the parent once the child has them.
        var childEnds: [Int32] = []
        defer { childEnds.forEach { _ = Glibc.close($0) } }
        var parentEnds: [PipeEnd] = []
        func pipeEnds() throws -> (read: Int32, write: Int32) {
            var ends: [Int32] = [-1, -1]
            guard tl_pipe_cloexec(&ends) == 0 else {
                parentEnds.forEach { $0.close() }
                throw StartFailure(description: "pipe: \(String(cString: strerror(errno)))")
            }
            return (ends[0], ends[1])
        }

        switch input {
        case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .file(let path): posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
        case .pipe, .bytes:
            let ends = try pipeEnds()
            childEnds.append(ends.read)
            parentEnds.append(PipeEnd(ends.write))
            posix_spawn_file_actions_adddup2(&actions, ends.read, 0)
        }
        // Descriptor 1 or 2 of the child as `destination` says; the reading end of its pipe.
        func direct(_ destination: Output, to descriptor: Int32) throws -> PipeEnd? {
            switch destination {
            case .null: posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
            case .sameAsOutput:
                if descriptor == 1 { posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) }
                else { posix_spawn_file_actions_adddup2(&actions, 1, descriptor) }
            case .inherit: break
            case .pipe:
                let ends = try pipeEnds()
                childEnds.append(ends.write)
                let reading = PipeEnd(ends.read)
                parentEnds.append(reading)
                posix_spawn_file_actions_adddup2(&actions, ends.write, descriptor)
                return reading
            }
            return nil
        }
        let outputEnd = try direct(output, to: 1)
        let errorsEnd = try direct(errors, to: 2)
        tl_spawn_add_close_from(&actions, 3)
        if let directory { tl_spawn_add_chdir(&actions, directory) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        sigdelset(&everySignal, SIGKILL)
        sigdelset(&everySignal, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = [executable] + arguments
        let environmentLines = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        var child: pid_t = 0
        let result = withCStrings(argv) { argv in
            withOptionalCStrings(environmentLines) { envp in
                executable.contains("/")
                    ? posix_spawn(&child, executable, &actions, &attributes, argv, envp ?? UnsafePointer(environ))
                    : posix_spawnp(&child, executable, &actions, &attributes, argv, envp ?? UnsafePointer(environ))
            }
        }
        guard result == 0 else {
            parentEnds.forEach { $0.close() }
            throw StartFailure(description: "could not start \(executable): \(String(cString: strerror(result)))")
        }
        pid = child
        self.output = outputEnd
        self.errors = errorsEnd
        switch input {
        case .pipe: self.input = parentEnds.first
        case .bytes(let data):
            self.input = nil
            let writer = parentEnds.first!
            Thread {
                writer.write(data)
                writer.close()
            }.start()
        case .null, .file: self.input = nil
        }
    }

    /// Runs `executable` to its end: its termination and everything it wrote to standard output
    /// and error together (or standard output only, with `errors: .null`).
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           directory: String? = nil, input: Input = .null, errors: Output = .sameAsOutput)
        throws -> (termination: Termination, output: String) {
        let child = try ChildProcess(executable, arguments, environment: environment, directory: directory, input: input,
                                     output: .pipe, errors: errors)
        let text = child.output!.readToEnd()
        return (child.wait(), String(decoding: text, as: UTF8.self))
    }

    /// Runs `executable` to its end with standard output and error kept apart: its termination
    /// and what it wrote to each.
    public static func runSeparately(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                                     directory: String? = nil, input: Input = .null)
        throws -> (termination: Termination, output: String, errors: String) {
        let child = try ChildProcess(executable, arguments, environment: environment, directory: directory, input: input,
                                     output: .pipe, errors: .pipe)
        // Both pipes drain at once (standard error on a thread of its own), so a child that
        // fills one while the test waits on the other cannot stall.
        let errors = Mutex(Data())
        let errorsRead = DispatchSemaphore(value: 0)
        Thread { [pipe = child.errors!] in
            let data = pipe.readToEnd()
            errors.withLock { $0 = data }
            errorsRead.signal()
        }.start()
        let output = child.output!.readToEnd()
        errorsRead.wait()
        return (child.wait(), String(decoding: output, as: UTF8.self), String(decoding: errors.withLock { $0 }, as: UTF8.self))
    }

    /// ``run(_:_:environment:directory:input:errors:)`` on a thread of its own, for async code:
    /// a test that blocked one of the few threads of Swift's task pool while a program runs for
    /// seconds would hold up every other test waiting for one.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           directory: String? = nil, input: Input = .null, errors: Output = .sameAsOutput)
        async throws -> (termination: Termination, output: String) {
        try await onOwnThread { try run(executable, arguments, environment: environment, directory: directory, input: input, errors: errors) }
    }

    /// ``runSeparately(_:_:environment:directory:input:)`` on a thread of its own, for async code.
    public static func runSeparately(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                                     directory: String? = nil, input: Input = .null)
        async throws -> (termination: Termination, output: String, errors: String) {
        try await onOwnThread { try runSeparately(executable, arguments, environment: environment, directory: directory, input: input) }
    }

    /// Waits for the child to end on a thread of its own, for async code.
    @discardableResult
    public func ended() async -> Termination {
        await withCheckedContinuation { (done: CheckedContinuation<Termination, Never>) in
            Thread { done.resume(returning: self.wait()) }.start()
        }
    }

    private static func onOwnThread<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Result, Error>) in
            Thread { done.resume(with: Swift.Result { try body() }) }.start()
        }
    }

    /// Sends `signal` (SIGTERM unless told), unless the child was already reaped.
    public func signal(_ signal: Int32 = SIGTERM) {
        reaped.withLock { termination in
            if termination == nil { _ = kill(pid, signal) }
        }
    }

    /// Waits for the child to end (reaping it once), and how it ended. The wait itself holds no
    /// lock: ``signal(_:)`` from another thread meanwhile still reaches the child. It waits
    /// without reaping (`WNOWAIT`), so the pid stays this child's until it is reaped under the lock.
    @discardableResult
    public func wait() -> Termination {
        if let termination = reaped.withLock({ $0 }) { return termination }
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0, errno == EINTR {}
        return reaped.withLock { termination in
            if let termination { return termination }
            let ended = Self.reap(pid, blocking: true)!
            termination = ended
            return ended
        }
    }

    /// True until the child has ended (then it is reaped, and ``wait()`` returns at once).
    public var isRunning: Bool {
        reaped.withLock { termination in
            if termination == nil { termination = Self.reap(pid, blocking: false) }
            return termination == nil
        }
    }

    private static func reap(_ pid: pid_t, blocking: Bool) -> Termination? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            if result == pid { break }
            if result == 0 { return nil }
            if errno == EINTR { continue }
            // Reaped elsewhere (nothing in the tests does): report it as gone.
            return .exited(-1)
        }
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }
}

/// One end of a pipe to a child: reads retry `EINTR`, end of file is an empty read.
public final class PipeEnd: Sendable {
    private let descriptor: Mutex<Int32>

    init(_ descriptor: Int32) { self.descriptor = Mutex(descriptor) }

    deinit { close() }

    /// Up to `limit` bytes as soon as any arrive; nil at end of file (or once closed).
    public func read(upTo limit: Int = 65_536) -> Data? {
        let fd = descriptor.withLock { $0 }
        guard fd >= 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            let count = Glibc.read(fd, &buffer, limit)
            if count > 0 { return Data(buffer[0..<count]) }
            if count < 0, errno == EINTR { continue }
            return nil
        }
    }

    /// Everything until end of file.
    public func readToEnd() -> Data {
        var data = Data()
        while let chunk = read() { data.append(chunk) }
        return data
    }

    /// Writes all of `data`; false if the reader is gone. A reader that is gone costs this
    /// thread a SIGPIPE, which is blocked and consumed here rather than ending the test process.
    @discardableResult
    public func write(_ data: Data) -> Bool {
        let fd = descriptor.withLock { $0 }
        guard fd >= 0 else { return false }
        var brokenPipe = sigset_t(), previous = sigset_t()
        sigemptyset(&brokenPipe)
        sigaddset(&brokenPipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &brokenPipe, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else {
                    if errno == EPIPE {
                        var none = timespec()
                        _ = sigtimedwait(&brokenPipe, nil, &none)
                    }
                    return false
                }
                offset += count
            }
            return true
        }
    }

    /// Closes this end (the child then reads end of file, or gets SIGPIPE). Idempotent.
    public func close() {
        descriptor.withLock { fd in
            if fd >= 0 { _ = Glibc.close(fd) }
            fd = -1
        }
    }
}

private func withCStrings<Result>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result) -> Result {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

private func withOptionalCStrings<Result>(_ strings: [String]?, _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>?) -> Result) -> Result {
    guard let strings else { return body(nil) }
    return withCStrings(strings) { body($0) }
}
