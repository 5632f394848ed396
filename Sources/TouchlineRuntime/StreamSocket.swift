#if canImport(Glibc)
import Glibc
#endif

/// A connected non-blocking stream socket: the system calls an HTTP/1.1 connection makes, with
/// their outcomes as values instead of `errno`.
///
/// A plain descriptor (copyable); whoever accepted it owns it and calls ``close()`` once.
struct StreamSocket {
    let fd: Int32

    enum ReadResult: Equatable {
        case bytes(Int)
        case wouldBlock
        /// The peer will send nothing more (it closed or shut down its side).
        case endOfStream
        case failed(Int32)
    }

    enum WriteResult: Equatable {
        case wrote(Int)
        case wouldBlock
        case failed(Int32)
    }

    /// Reads what is there, up to `buffer.count` bytes.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .endOfStream }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(code)
            }
        }
    }

    /// Writes as much of `bytes` as the socket takes now; never raises SIGPIPE.
    func send(_ bytes: UnsafeRawBufferPointer) -> WriteResult {
        while true {
            let count = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if count >= 0 { return .wrote(count) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(code)
            }
        }
    }

    /// True when bytes wait to be read (looked at, not taken).
    var hasInput: Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// Sends FIN after what is queued: the peer reads everything written so far, then its end.
    func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// Small writes (a streamed event, a short answer) go out at once instead of waiting for an
    /// acknowledgement (Nagle's algorithm).
    func disableNagle() {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    func close() { _ = Glibc.close(fd) }
}
