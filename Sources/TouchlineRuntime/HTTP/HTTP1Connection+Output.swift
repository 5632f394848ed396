/// The writing half of ``HTTP1Connection``: answers and streamed answers for the request being
/// handled, the output buffer and its write deadline, and the lingering close.
///
/// Output is written at once when the socket takes it; the rest waits in `output`, the write
/// watcher is armed, and each bit of progress re-arms the write deadline (a client that stops
/// reading is closed after ``HTTPServerConfiguration/writeTimeout``).
extension HTTP1Connection {
    /// Answers `request` (the one being handled); ignored for any other.
    func respond(_ response: HTTPResponse, to request: HTTPRequest) {
        guard request === current, phase == .handling else { return }
        let keepAlive = request.head.keepAlive && !server.isShuttingDown
        complete(request, keepAlive: keepAlive) {
            sendFinal(response, head: request.head, keepAlive: keepAlive)
        }
    }

    /// Writes the head of a streamed answer; false when `request` is not the one being handled.
    func startStream(status: Int, headers: [(name: String, value: String)], for request: HTTPRequest) -> Bool {
        guard request === current, phase == .handling else { return false }
        streamChunked = request.head.minorVersion >= 1
        // An HTTP/1.0 client reads a streamed body until the connection closes.
        streamClosesConnection = !streamChunked || !request.head.keepAlive || server.isShuttingDown
        let persistence: HTTP1ResponseEncoder.Persistence = streamClosesConnection ? .close : .keepAlive
        queue(HTTP1ResponseEncoder.head(status: status, headers: headers, framing: streamChunked ? .chunked : .untilClose,
                                        persistence: persistence, date: server.date()))
        return true
    }

    /// Writes one piece of a streamed answer (one chunk in HTTP/1.1).
    func writeStream(_ bytes: [UInt8], for request: HTTPRequest) -> Bool {
        guard request === current, phase == .handling else { return false }
        guard !bytes.isEmpty, request.method != .head else { return true }
        if streamChunked {
            var chunk: [UInt8] = []
            chunk.reserveCapacity(bytes.count + 12)
            HTTP1ResponseEncoder.appendChunk(bytes, to: &chunk)
            queue(chunk)
        } else {
            queue(bytes)
        }
        return true
    }

    /// Ends a streamed answer (the last chunk) and finishes its request.
    func endStream(for request: HTTPRequest) {
        guard request === current, phase == .handling else { return }
        complete(request, keepAlive: !streamClosesConnection && !server.isShuttingDown) {
            if streamChunked && request.method != .head { queue(HTTP1ResponseEncoder.lastChunk) }
        }
    }

    /// Detaches the request being handled, sends its last bytes and moves on: to the next
    /// pipelined request, or to closing.
    private func complete(_ request: HTTPRequest, keepAlive: Bool, send: () -> Void) {
        current = nil
        releaseBody()
        phase = keepAlive ? .waiting : .closing
        request.markFinished()
        server.requestFinished()
        send()
        switch phase {
        case .waiting:
            updateReadDeadline()
            resumeParsing()
        case .closing where bufferedOutputBytes == 0:
            finishClosing()
        default:
            break
        }
    }

    /// Queues a complete answer with its head. `head` is the request's (nil when none was read):
    /// it decides the HTTP/1.0 keep-alive header and leaves out the body of a HEAD answer.
    func sendFinal(_ response: HTTPResponse, head: HTTPRequestHead?, keepAlive: Bool) {
        let persistence: HTTP1ResponseEncoder.Persistence = !keepAlive ? .close : head?.minorVersion == 0 ? .keepAliveHTTP10 : .keepAlive
        var bytes = HTTP1ResponseEncoder.head(status: response.status, headers: response.headers, framing: .length(response.body.count),
                                              persistence: persistence, date: server.date())
        if head?.method != "HEAD" && HTTP1ResponseEncoder.hasBody(status: response.status) { bytes += response.body }
        queue(bytes)
    }

    func queue(_ bytes: [UInt8]) {
        guard phase != .closed && phase != .lingering else { return }
        if bufferedOutputBytes == 0 {
            output = bytes
            outputSent = 0
        } else {
            output += bytes
        }
        flush()
    }

    private func flush() {
        var progressed = false
        while outputSent < output.count {
            let result = output.withUnsafeBytes { socket.send(UnsafeRawBufferPointer(rebasing: $0[outputSent...])) }
            switch result {
            case .wrote(let count) where count > 0:
                outputSent += count
                progressed = true
            case .wrote, .wouldBlock:
                return waitForWritable(progressed: progressed)
            case .failed:
                // The client is gone: nothing more can reach it.
                return close()
            }
        }
        output = []
        outputSent = 0
        writeWatcher?.stop()
        writeTimer?.cancel()
        outputDrained()
    }

    private func waitForWritable(progressed: Bool) {
        if outputSent > 64 << 10 && outputSent * 2 > output.count {
            output.removeFirst(outputSent)
            outputSent = 0
        }
        let loop = server.loop
        if writeWatcher == nil {
            writeWatcher = FDWatcher(loop: loop, fd: socket.fd, interest: .writable, watching: false) { [unowned self] _ in flush() }
            writeTimer = LoopTimer(loop: loop) { [unowned self] in close() }
        }
        writeWatcher?.resume()
        if progressed || writeTimer?.isScheduled != true { writeTimer?.schedule(after: server.configuration.connectionLimits.writeTimeout) }
    }

    private func outputDrained() {
        switch phase {
        case .closing:
            finishClosing()
        case .waiting, .skipping:
            updateReadDeadline()
            resumeParsing()
        case .handling:
            // A streamed answer waiting to write its next piece.
            if let current, let drained = current.outputDrained {
                current.outputDrained = nil
                drained()
            }
        default:
            break
        }
        server.connectionDrained()
    }

    /// The last answer is written: shut the sending side (the client reads the answer, then its
    /// end) and drop what still arrives for a bounded time and size, so that closing does not
    /// send a reset that could destroy the answer before the client has read it.
    func finishClosing() {
        guard phase == .closing else { return }
        if peerFinished { return close() }
        socket.shutdownWrite()
        phase = .lingering
        updateReadDeadline()
        updateReadInterest()
    }
}
