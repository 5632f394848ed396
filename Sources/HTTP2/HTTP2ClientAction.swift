import TouchlineRuntime

/// The timers of one client connection. Each kind has at most one deadline at a time, and the
/// connection runs them all on one ``TimerSet``.
enum HTTP2ClientTimer: Int, CaseIterable {
    /// Encodes the frames queued during a loop turn in one batch (the shell's own, never the state machine's).
    case flush
    /// Bounds DNS, TCP, TLS and the server's first SETTINGS.
    case connect
    /// Looks for a quiet interval, to PING a connection that may be dead.
    case idle
    /// Bounds the wait for a PING acknowledgement.
    case ping
    /// Bounds how long in-flight streams may take after draining began.
    case drain
    /// Finds streams older than the response timeout.
    case response
}

/// What to do with one timer after an input.
enum TimerChange: Equatable {
    case keep
    case cancel
    /// Fire at this monotonic instant (nanoseconds, the clock the inputs' `now` comes from).
    case arm(at: UInt64)
}

/// One ``TimerChange`` per lifecycle timer; fixed size, so returning it allocates nothing.
struct TimerChanges: Equatable {
    private var connect = TimerChange.keep
    private var idle = TimerChange.keep
    private var ping = TimerChange.keep
    private var drain = TimerChange.keep
    private var response = TimerChange.keep

    subscript(kind: HTTP2ClientTimer) -> TimerChange {
        get {
            switch kind {
            case .flush: .keep
            case .connect: connect
            case .idle: idle
            case .ping: ping
            case .drain: drain
            case .response: response
            }
        }
        set {
            switch kind {
            case .flush: preconditionFailure("the flush timer belongs to the shell")
            case .connect: connect = newValue
            case .idle: idle = newValue
            case .ping: ping = newValue
            case .drain: drain = newValue
            case .response: response = newValue
            }
        }
    }

    var isEmpty: Bool { self == TimerChanges() }
}

/// What becomes of one request whose stream ended (or that the connection gives up on).
enum HTTP2StreamOutcome {
    /// Complete it with the response it collected.
    case response
    case fail(HTTP2RequestError)
    /// Give it to the owner to send elsewhere (or retry or fail it, when standalone).
    case handBack(HTTP2RetryReason)
}

/// What ``HTTP2ClientStateMachine/requestArrived()`` decided for a new request.
enum HTTP2RequestAdmission {
    /// Append it to the queue; then submit queued requests if `submitNow` is positive.
    case enqueue(submitNow: Int)
    case fail(HTTP2RequestError)
    case handBack(HTTP2RetryReason)
}

/// The shell's work after one input of ``HTTP2ClientStateMachine``, performed in the order of
/// the properties: requests, frames, timers, the delegate's report, closing, flushing.
///
/// A plain value of fixed size: returning one per input allocates nothing.
struct HTTP2ClientAction {
    enum Requests {
        case none
        /// Submit queued requests while ``HTTP2ClientStateMachine/streamsToOpen`` allows
        /// (`count` is how many that was when the action was made).
        case submit(count: Int)
        /// Every queued request goes back to the owner for another connection.
        case handBackQueued(HTTP2RetryReason)
        case failQueued(HTTP2RequestError)
        case failInFlight(HTTP2RequestError)
        /// Reset (RST_STREAM CANCEL) the streams whose response deadline is at or before `now`,
        /// then report ``HTTP2ClientStateMachine/overdueStreamsReset(oldestRemainingSubmittedAt:)``.
        case resetOverdueStreams(now: UInt64)
    }

    enum Frame: Equatable {
        case none
        case ping
        /// GOAWAY with NO_ERROR and the last stream the server opened (a graceful end, once the
        /// last stream ended).
        case goaway
    }

    enum Report: Equatable {
        case none
        case ready
        case draining
    }

    /// How the transport ends when the connection closes.
    enum Ending: Equatable {
        /// Drop it at once (a failure, or ``HTTP2ClientConnection/close()``).
        case now
        /// Encode what nghttp2 still has (a GOAWAY, say), then close once the output is written.
        case afterPendingFrames
        /// Close once the output already written is sent, without encoding more (streams were
        /// abandoned, so their frames must not be produced).
        case afterWrittenOutput
    }

    struct Close: Equatable {
        /// nil after a clean drain.
        var error: TransportError?
        var ending: Ending
    }

    var requests = Requests.none
    var frame = Frame.none
    var timers = TimerChanges()
    var report = Report.none
    /// The connection is closed: hand back or fail what it holds, free the session, end the
    /// transport, tell the delegate.
    var close: Close?
    /// Encode and write pending frames now.
    var flush = false

    static let none = HTTP2ClientAction()
}

/// HTTP/2 error codes (RFC 9113, section 7) the state machine decides on.
enum HTTP2ErrorCode {
    static let noError: UInt32 = 0x0
    static let internalError: UInt32 = 0x2
    static let refusedStream: UInt32 = 0x7
    static let cancel: UInt32 = 0x8
}
