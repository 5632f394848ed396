import Foundation
import Measurements
import Synchronization

/// The machine's own noise, measured beside a latency phase so that the phase's figures can be
/// judged against it: a latency target in absolute milliseconds holds on a quiet machine and
/// fails on a busy or slower one with the same build.
///
/// One thread of its own wakes every `interval` and times, each round:
/// - how late it woke (the scheduler's delay, what a host stealing CPU shows first);
/// - a one-byte round trip over a plain loopback TCP connection to an echo thread (what every
///   hop of ingest→APNs pays at least once, with no gateway code in it);
/// - a 4 KB write and `fdatasync` of a file in `directory` (the disk every acknowledged event
///   waits for, on the gateway's own file system).
final class MachineNoise: Sendable {
    struct Figures: Sendable {
        var wakeLateness: LatencyHistogram
        var loopbackRoundTrip: LatencyHistogram
        var fdatasync: LatencyHistogram

        /// What one ingest→APNs is compared with: a loopback round trip and an fdatasync, each
        /// at its p99 (every event pays at least one of each).
        var referenceP99: Double { loopbackRoundTrip.summary.p99 + fdatasync.summary.p99 }
    }

    private let stop = StopFlag()
    private let finished = DispatchSemaphore(value: 0)
    private let result = Mutex<Result<Figures, LoadError>?>(nil)

    /// Starts measuring at once; ``finish()`` stops and returns the figures.
    init(directory: String, interval: Duration = .milliseconds(10)) throws {
        let listener = try Self.listen()
        let path = directory + "/noise-probe-\(getpid())"
        Thread { [self] in
            defer { finished.signal() }
            let measured = Result { () throws(LoadError) in try Self.measure(listener: listener, path: path, interval: interval, stop: stop) }
            result.withLock { $0 = measured }
        }.start()
    }

    /// Stops the probe and returns what it measured.
    func finish() throws -> Figures {
        stop.set()
        finished.wait()
        return try result.withLock { $0 }!.get()
    }

    private static func measure(listener: (descriptor: Int32, port: Int), path: String, interval: Duration,
                                stop: StopFlag) throws(LoadError) -> Figures {
        defer { close(listener.descriptor) }
        Thread { echo(listener.descriptor) }.start()
        let client: Int32
        do { client = try TCPSocket.connect(host: "127.0.0.1", port: listener.port, receiveTimeout: 5) } catch { throw LoadError("\(error)") }
        defer { close(client) }
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard file >= 0 else { throw LoadError("the noise probe cannot write \(path): \(String(cString: strerror(errno)))") }
        defer {
            close(file)
            unlink(path)
        }
        var figures = Figures(wakeLateness: LatencyHistogram(), loopbackRoundTrip: LatencyHistogram(), fdatasync: LatencyHistogram())
        let block = [UInt8](repeating: 0x2a, count: 4096)
        var byte: UInt8 = 1
        var due = monotonicNanoseconds()
        while !stop.isSet {
            due += interval.inNanoseconds
            sleep(untilMonotonic: due)
            let woke = monotonicNanoseconds()
            figures.wakeLateness.record(max(0, woke - due))
            guard send(client, &byte, 1, Int32(MSG_NOSIGNAL)) == 1, recv(client, &byte, 1, 0) == 1 else {
                throw LoadError("the noise probe's loopback round trip failed: \(String(cString: strerror(errno)))")
            }
            let echoed = monotonicNanoseconds()
            figures.loopbackRoundTrip.record(echoed - woke)
            guard pwrite(file, block, block.count, 0) == block.count, fdatasync(file) == 0 else {
                throw LoadError("the noise probe's write and fdatasync failed: \(String(cString: strerror(errno)))")
            }
            figures.fdatasync.record(monotonicNanoseconds() - echoed)
            // A probe that fell far behind does not try to catch up in a burst.
            due = max(due, monotonicNanoseconds() - interval.inNanoseconds)
        }
        return figures
    }

    /// A listening socket on 127.0.0.1 and a free port.
    private static func listen() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LoadError("socket() failed: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && Glibc.listen(descriptor, 1) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw LoadError("the noise probe cannot listen on loopback: \(String(cString: strerror(errno)))")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Accepts one connection and sends back every byte until it closes.
    private static func echo(_ listener: Int32) {
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { return }
        defer { close(connection) }
        var one: Int32 = 1
        setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var byte: UInt8 = 0
        while recv(connection, &byte, 1, 0) == 1, send(connection, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 {}
    }
}
