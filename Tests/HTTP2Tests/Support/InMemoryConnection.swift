@testable import HTTP2
import TouchlineCore
import TouchlineRuntime

/// A real ``HTTP2ClientConnection`` wired back to back to an ``InMemoryServer``: bytes move
/// between the two nghttp2 sessions by `mem_send`/`mem_recv` when the test calls ``pump()``,
/// and time is virtual (``advance(by:)`` fires the connection's timers in deadline order).
/// No TLS, no sockets, no loop thread: everything runs on the test's thread, deterministically.
final class InMemoryConnection {
    let server: InMemoryServer
    let clock = VirtualTime()
    let timers: TimerSet
    let transport = MemoryTransport()
    private(set) var connection: HTTP2ClientConnection!
    /// One slot per request sent through ``send(_:)``, in order.
    private(set) var results: [RequestResult?] = []
    private(set) var duplicateCompletions = 0
    /// While true the server's output is dropped: a peer that completed TLS and then says nothing.
    var serverIsSilent = false
    /// Keeps the unstarted loop the connection names alive (its timers run on `timers` instead).
    private let loop = EventLoop(name: "in-memory")

    init(configuration: HTTP2ConnectionConfiguration = .init(host: "127.0.0.1", port: 8443),
         server: InMemoryServer = InMemoryServer(maxConcurrentStreams: 100), delegate: HTTP2ClientConnectionDelegate? = nil) {
        self.server = server
        timers = TimerSet(virtualTime: clock)
        connection = HTTP2ClientConnection(loop: loop, configuration: configuration, delegate: delegate, timers: timers) { [transport] _ in
            transport
        }
    }

    /// Finishes the "TLS handshake" and exchanges the prefaces and SETTINGS.
    func connect() {
        connection.transportDidConnect()
        pump()
    }

    /// Sends requests through the connection; their results fill ``results`` as they complete.
    @discardableResult
    func send(_ requests: [HTTP2Request]) -> Range<Int> {
        let first = results.count
        results += Array(repeating: nil, count: requests.count)
        for (offset, request) in requests.enumerated() {
            connection.send(request) { [self] result in
                if results[first + offset] != nil { duplicateCompletions += 1 }
                results[first + offset] = result
            }
        }
        pump()
        return first..<results.count
    }

    /// Moves bytes both ways and runs the timers due now until nothing more happens.
    func pump() {
        var rounds = 0
        while true {
            rounds += 1
            precondition(rounds < 10_000, "the two sessions keep talking")
            if let next = timers.nextDeadline, next <= clock.now {
                timers.fireDue()
                continue
            }
            let toServer = transport.take()
            if !toServer.isEmpty {
                server.receive(toServer)
                connection.transportDidDrain()
            }
            let output = server.takeOutput()
            let toClient = transport.isClosed || serverIsSilent ? [] : output
            if !toClient.isEmpty { toClient.withUnsafeBytes { connection.transportDidRead($0) } }
            if toServer.isEmpty, toClient.isEmpty { return }
        }
    }

    /// Moves virtual time forward, stopping at each timer deadline on the way.
    func advance(by duration: Duration) {
        let target = clock.now + UInt64(duration.inNanoseconds)
        while let next = timers.nextDeadline, next <= target {
            clock.now = max(clock.now, next)
            pump()
        }
        clock.now = target
        pump()
    }

    /// The server answers every waiting request and the answers arrive, until no request waits.
    func serveAll() {
        while !server.waiting.isEmpty {
            server.respondToAll()
            pump()
        }
    }

    /// The peer closes the connection.
    func closeFromServer() {
        connection.transportDidClose(.closedByPeer)
    }

    var state: HTTP2ClientConnection.State { connection.state }
    var stats: HTTP2ClientConnection.Stats { connection.stats }
    var successes: [HTTP2Response] { results.compactMap { try? $0?.get() } }
    var failures: [HTTP2RequestError] {
        results.compactMap { if case .failure(let error) = $0 { error } else { nil } }
    }
    var pending: Int { results.filter { $0 == nil }.count }
}

/// The client's end of the pipe: what the connection writes waits here until the next pump.
final class MemoryTransport: HTTP2ClientTransport {
    private var buffer: [UInt8] = []
    private(set) var isClosed = false
    /// How the connection closed it: at once, or after its output.
    private(set) var closedAfterOutput = false

    var pendingOutputBytes: Int { buffer.count }

    func write(_ bytes: UnsafeRawBufferPointer) {
        guard !isClosed else { return }
        buffer.append(contentsOf: bytes)
    }

    func close() { isClosed = true }

    func closeAfterOutput() {
        isClosed = true
        closedAfterOutput = true
    }

    /// The bytes written since the last call (also those written just before closing after output).
    func take() -> [UInt8] {
        defer { buffer.removeAll(keepingCapacity: true) }
        return closedAfterOutput || !isClosed ? buffer : []
    }
}
