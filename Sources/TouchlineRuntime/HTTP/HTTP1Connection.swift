/// One accepted HTTP/1.1 connection: reads and parses requests one at a time, hands each to the
/// server, writes the answers in order, and enforces the deadlines. Its writing half (answers,
/// streams, the output buffer, lingering close) is in `HTTP1Connection+Output.swift`.
///
/// Loop-confined: created, driven and closed on the server's loop (`@unchecked Sendable` only so
/// closures running there can capture it). Requests hold it weakly.
///
/// A new connection must deliver its first complete head within
/// ``HTTPConnectionLimits/firstRequestTimeout`` of its accept, whatever the other deadlines say
/// (a timer of its own, cancelled by that head). A connection of the probes' reserve
/// (``HTTPConnectionSlots``) serves one probe and closes, and answers anything else like a
/// connection over the cap.
///
/// Phases: `waiting` (idle, or reading a head) → `body` (head admitted, body arriving) →
/// `handling` (the handler has the request; input is kept, up to ``pendingLimit`` bytes, for the
/// pipelined requests behind it, so a client that leaves is still noticed) → `waiting` again
/// after the answer, or `closing` (the last answer is being written; input is dropped) →
/// `lingering` (sending side shut, input dropped until the client closes or a bound is hit) →
/// `closed`. A refused head without a body passes through `skipping` while the parser ends its
/// message, and the connection is kept.
final class HTTP1Connection: @unchecked Sendable {
    enum Phase { case waiting, body, skipping, handling, closing, lingering, closed }

    /// What the connection may do: serve anything, serve one probe, or only write the refusal it
    /// was opened with.
    enum Role { case general, probe, refusal }

    /// Which deadline the read timer stands for.
    enum ReadDeadline { case idle, head, body, linger }

    /// Bytes of pipelined input kept while a request is handled; reading pauses beyond it.
    static let pendingLimit = 64 << 10
    /// Unsent answer bytes above which no further pipelined request is started.
    static let outputHighWater = 64 << 10

    unowned let server: HTTPServer
    /// The server's number for it, in the order of accepts.
    let id: UInt64
    let socket: StreamSocket
    let role: Role
    var phase = Phase.waiting {
        // A probe connection with its answer is done with its slot: the next probe may have it.
        didSet { if phase == .closing && oldValue != .closing && role == .probe { server.probeAnswered(on: self) } }
    }
    var parser: HTTP1RequestParser
    /// Input read but not parsed yet (pipelined requests behind the one being handled).
    var pending: [UInt8] = []
    /// The request whose body is arriving.
    var incoming: (head: HTTPRequestHead, method: HTTPMethod, body: [UInt8])?
    /// The request with the handler.
    var current: HTTPRequest?
    /// Body bytes reserved in the server's budget for `incoming` or `current`, and whose share
    /// they count against (``HTTPAdmission``).
    var reservedBodyBytes = 0
    var bodyOwner: Int?
    /// True until the first complete head: the first-request deadline runs.
    private var awaitingFirstHead = true
    /// The client sent its end of stream (or failed): nothing more will be read.
    var peerFinished = false
    /// True while ``consume(_:)`` runs, so an answer given synchronously from the handler does
    /// not start parsing again from inside it.
    var isConsuming = false
    var readDeadline: ReadDeadline?
    /// Bytes dropped while closing or lingering.
    var discardedBytes = 0

    var output: [UInt8] = []
    var outputSent = 0
    /// A streamed answer: chunked (HTTP/1.1) or until close (HTTP/1.0), and whether the
    /// connection closes after it.
    var streamChunked = false
    var streamClosesConnection = false

    private var readWatcher: FDWatcher?
    var writeWatcher: FDWatcher?
    private var readTimer: LoopTimer?
    private var firstRequestTimer: LoopTimer?
    var writeTimer: LoopTimer?

    init(server: HTTPServer, id: UInt64, socket: StreamSocket, role: Role) {
        self.server = server
        self.id = id
        self.socket = socket
        self.role = role
        parser = HTTP1RequestParser(limits: server.configuration.parserLimits)
    }

    /// Starts reading; a refusal connection writes `refusal` and closes instead.
    func start(refusal: HTTPResponse? = nil) {
        readWatcher = FDWatcher(loop: server.loop, fd: socket.fd, interest: .readable) { [unowned self] _ in readable() }
        readTimer = LoopTimer(loop: server.loop) { [unowned self] in readDeadlinePassed() }
        if let refusal {
            awaitingFirstHead = false
            phase = .closing
            sendFinal(refusal, head: nil, keepAlive: false)
        } else {
            let timer = LoopTimer(loop: server.loop) { [unowned self] in firstRequestDeadlinePassed() }
            timer.schedule(after: server.configuration.connectionLimits.firstRequestTimeout)
            firstRequestTimer = timer
            updateReadDeadline()
        }
    }

    var bufferedOutputBytes: Int { output.count - outputSent }

    /// True while waiting for a request whose bytes are in the socket, not read yet.
    var hasUnreadRequest: Bool { phase == .waiting && socket.hasInput }

    /// Whether bytes read now may go to the parser (rather than wait in `pending`).
    var canParse: Bool {
        (phase == .waiting || phase == .body || phase == .skipping) && bufferedOutputBytes < Self.outputHighWater
    }

    // MARK: Reading

    private func readable() {
        switch phase {
        case .closed: return
        case .closing, .lingering: return discardInput()
        default: break
        }
        let scratch = server.scratch
        let room = canParse ? scratch.count : min(scratch.count, Self.pendingLimit - pending.count)
        guard room > 0 else { return updateReadInterest() }
        switch socket.receive(into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<room])) {
        case .wouldBlock:
            return
        case .endOfStream, .failed:
            // The client left: a request it was waiting for is abandoned, like a partial one.
            return close()
        case .bytes(let count):
            let input = UnsafeRawBufferPointer(rebasing: scratch[0..<count])
            if pending.isEmpty && canParse {
                let consumed = consume(input)
                if consumed < count && isReading { pending.append(contentsOf: input[consumed...]) }
            } else {
                pending.append(contentsOf: input)
                resumeParsing()
            }
            updateReadInterest()
        }
    }

    /// True in the phases where input belongs to requests (not dropped).
    private var isReading: Bool {
        phase == .waiting || phase == .body || phase == .skipping || phase == .handling
    }

    /// Parses what waits in `pending`, when the connection may parse.
    func resumeParsing() {
        guard !isConsuming, canParse, !pending.isEmpty else { return updateReadInterest() }
        let input = pending
        pending = []
        let consumed = input.withUnsafeBytes { consume($0) }
        if consumed < input.count && isReading { pending = Array(input[consumed...]) }
        updateReadInterest()
    }

    /// Feeds `input` to the parser while the connection may parse; returns the bytes consumed.
    private func consume(_ input: UnsafeRawBufferPointer) -> Int {
        isConsuming = true
        defer { isConsuming = false }
        var offset = 0
        while canParse {
            let rest = UnsafeRawBufferPointer(rebasing: input[offset...])
            let (event, consumed) = parser.next(rest)
            offset += consumed
            guard let event else { break }
            switch event {
            case .head(let head): headReceived(head)
            case .body(let range): bodyReceived(UnsafeRawBufferPointer(rebasing: rest[range]))
            case .end: messageEnded()
            case .error(let error): refuse(error.response, head: nil)
            }
        }
        updateReadDeadline()
        return offset
    }

    private func headReceived(_ received: HTTPRequestHead) {
        // The deadline that ran until this head (idle, or head) is over. Forgetting it here makes
        // the next `updateReadDeadline` arm a fresh one even when the request is answered before
        // this read is done: otherwise the idle timer of before the request would stay armed.
        readTimer?.cancel()
        readDeadline = nil
        if awaitingFirstHead {
            awaitingFirstHead = false
            firstRequestTimer?.cancel()
            server.headReceived(on: self)
        }
        var head = received
        // A probe connection serves one request: its slot is for the next probe.
        if role == .probe { head.keepAlive = false }
        guard let method = HTTPMethod(rawValue: head.method), server.configuration.allowedMethods.contains(method) else {
            return refuse(.error(status: 501, error: "method_not_implemented",
                                 message: "the server does not implement \(head.method.prefix(40))"), head: head)
        }
        if server.isShuttingDown {
            return refuse(.error(status: 503, error: "shutting_down", message: "the server is shutting down"), head: head)
        }
        if role == .probe && !(method == .get && server.configuration.probePaths.contains(HTTPRequestTarget(parsing: head.target).path)) {
            return refuse(server.refusalForFullServer(), head: head)
        }
        switch server.configuration.admission?(head) ?? .admit(bodyOwner: nil) {
        case .refuse(let refusal): return refuse(refusal.response, head: head)
        case .admit(let owner): bodyOwner = owner
        }
        if case .length(let length) = head.framing, length > 0 {
            if let refusal = server.reserveBody(Int(length), owner: bodyOwner) { return refuse(refusal, head: head) }
            reservedBodyBytes = Int(length)
        }
        if head.expectsContinue && head.hasBody { queue(HTTP1ResponseEncoder.continueResponse) }
        var body: [UInt8] = []
        if case .length(let length) = head.framing { body.reserveCapacity(Int(min(length, 64 << 10))) }
        incoming = (head, method, body)
        phase = .body
    }

    private func bodyReceived(_ bytes: UnsafeRawBufferPointer) {
        guard phase == .body, var request = incoming else { return }
        if request.head.framing == .chunked {
            if let refusal = server.reserveBody(bytes.count, owner: bodyOwner) { return refuse(refusal, head: request.head, bodyStarted: true) }
            reservedBodyBytes += bytes.count
        }
        incoming = nil
        request.body.append(contentsOf: bytes)
        incoming = request
    }

    private func messageEnded() {
        if phase == .skipping {
            phase = .waiting
            return
        }
        guard phase == .body, let request = incoming else { return }
        incoming = nil
        let handed = HTTPRequest(head: request.head, method: request.method, body: request.body, connection: self)
        current = handed
        phase = .handling
        server.dispatch(handed)
    }

    /// Answers a request the server refuses itself. The connection is kept only when no body was
    /// to follow (nothing unread is left in the way of the next request) and the client allows it.
    func refuse(_ response: HTTPResponse, head: HTTPRequestHead?, bodyStarted: Bool = false) {
        let keepAlive = head.map { !$0.hasBody && !bodyStarted && $0.keepAlive } == true && !server.isShuttingDown
        firstRequestTimer?.cancel()
        releaseBody()
        incoming = nil
        phase = keepAlive ? .skipping : .closing
        sendFinal(response, head: head, keepAlive: keepAlive)
        if phase == .closing && bufferedOutputBytes == 0 { finishClosing() }
    }

    /// Drops input while the last answer is written or the connection lingers.
    private func discardInput() {
        switch socket.receive(into: server.scratch) {
        case .bytes(let count):
            discardedBytes += count
            if discardedBytes > server.configuration.maxLingerBytes { close() }
        case .wouldBlock:
            break
        case .endOfStream, .failed:
            if phase == .lingering { return close() }
            peerFinished = true
            updateReadInterest()
        }
    }

    func updateReadInterest() {
        guard let readWatcher else { return }
        let wanted: Bool = switch phase {
        case .closed: false
        case .closing, .lingering: !peerFinished
        default: !peerFinished && (canParse || pending.count < Self.pendingLimit)
        }
        if wanted { readWatcher.resume() } else { readWatcher.stop() }
    }

    // MARK: Deadlines

    func updateReadDeadline() {
        let wanted: ReadDeadline? = switch phase {
        case .waiting, .skipping: parser.isReadingHead ? .head : (bufferedOutputBytes == 0 ? .idle : nil)
        case .body: .body
        case .lingering: .linger
        case .handling, .closing, .closed: nil
        }
        guard wanted != readDeadline else { return }
        readDeadline = wanted
        guard let wanted else { return readTimer?.cancel() ?? () }
        let configuration = server.configuration
        let delay = switch wanted {
        case .idle: configuration.connectionLimits.idleTimeout
        case .head: configuration.connectionLimits.headTimeout
        case .body: configuration.connectionLimits.bodyTimeout
        case .linger: configuration.lingerTimeout
        }
        readTimer?.schedule(after: delay)
    }

    /// No complete head within the first-request deadline: a connection that sent nothing is
    /// closed without an answer (nobody waits for one), one that sent part of a head gets 408.
    private func firstRequestDeadlinePassed() {
        guard phase == .waiting, awaitingFirstHead else { return }
        server.firstRequestTimedOut()
        guard parser.isReadingHead else { return close() }
        // The head deadline that also runs is over too: the answer ends the connection.
        readTimer?.cancel()
        readDeadline = nil
        let limit = secondsText(server.configuration.connectionLimits.firstRequestTimeout)
        refuse(.error(status: 408, error: "request_timeout", message: "the request head was not complete within \(limit) of connecting"), head: nil)
    }

    private func readDeadlinePassed() {
        let configuration = server.configuration
        switch readDeadline {
        case .head?:
            readDeadline = nil
            refuse(.error(status: 408, error: "request_timeout",
                          message: "the request head was not complete within \(secondsText(configuration.connectionLimits.headTimeout))"), head: nil)
        case .body?:
            readDeadline = nil
            refuse(.error(status: 408, error: "request_timeout",
                          message: "the request body was not complete within \(secondsText(configuration.connectionLimits.bodyTimeout))"), head: nil)
        case .idle?, .linger?, nil:
            close()
        }
    }

    // MARK: Closing

    /// Gives the body bytes of the request under way back to the server's budget.
    func releaseBody() {
        server.releaseBody(reservedBodyBytes, owner: bodyOwner)
        reservedBodyBytes = 0
        bodyOwner = nil
    }

    /// Closes the socket now; a request still with the handler is abandoned. `notifyingServer`
    /// is false only when the server itself is going away.
    func close(notifyingServer: Bool = true) {
        guard phase != .closed else { return }
        phase = .closed
        readWatcher?.stop()
        writeWatcher?.stop()
        readTimer?.cancel()
        firstRequestTimer?.cancel()
        writeTimer?.cancel()
        socket.close()
        pending = []
        output = []
        outputSent = 0
        incoming = nil
        let abandoned = current
        current = nil
        guard notifyingServer else { return }
        releaseBody()
        if let abandoned {
            abandoned.markFinished()
            server.requestFinished()
        }
        server.connectionClosed(self)
    }
}

/// `10 s`, `0.2 s`: a deadline as messages give it.
func secondsText(_ duration: Duration) -> String {
    let milliseconds = duration.inNanoseconds / 1_000_000
    if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
    var fraction = String(milliseconds % 1000)
    while fraction.count < 3 { fraction = "0" + fraction }
    while fraction.hasSuffix("0") { fraction.removeLast() }
    return "\(milliseconds / 1000).\(fraction) s"
}
