import TouchlineRuntime

/// Requests that one responder answers (NATS request-reply), sent from one loop and answered on
/// it: the ingest path hands a batch to its partition's owner this way. One subscription to a
/// private inbox serves every request; each request waits for its answer at most its timeout.
///
/// Loop-confined: create it, send requests and receive completions on `loop`.
public final class NATSRequests: @unchecked Sendable {
    /// Why a request got no answer.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// No one subscribes to the subject (the servers say so at once).
        case noResponders(subject: String)
        /// No answer within the timeout: the request may or may not have been acted on.
        case timedOut(subject: String, after: Duration)
        /// The request could not be sent (connection closed, say).
        case notSent(NATSError)
        /// The asker stopped waiting (``abandon(subject:)``): whoever the subject reached is no
        /// longer the one to answer. Like a timeout, it may or may not have been acted on.
        case abandoned(subject: String)

        public var description: String {
            switch self {
            case .noResponders(let subject): "no responder on \(subject)"
            case .timedOut(let subject, let after): "no answer on \(subject) within \(after)"
            case .notSent(let error): error.description
            case .abandoned(let subject): "stopped waiting for an answer on \(subject)"
            }
        }
    }

    public typealias Completion = (Result<NATSMessage, Failure>) -> Void

    private struct Pending {
        let subject: String
        let timer: LoopTimer
        /// How many messages the answer is, read from its first.
        let parts: (NATSMessage) -> Int
        var received: [NATSMessage] = []
        let completion: (Result<[NATSMessage], Failure>) -> Void
    }

    private let connection: any MessagingClient
    private let loop: EventLoop
    private let inbox: String
    private var subscription: (any MessageSubscription)?
    private var pending: [UInt64: Pending] = [:]
    private var lastID: UInt64 = 0

    public init(connection: any MessagingClient, loop: EventLoop) throws(NATSError) {
        self.connection = connection
        self.loop = loop
        inbox = connection.newInbox()
        subscription = try connection.subscribe(to: inbox + ".*", loop: loop) { [weak self] answer in
            self?.answered(answer)
        }
    }

    deinit { subscription?.cancel() }

    /// Sends `payload` to `subject`; `completion` runs on the loop with the answer or the failure,
    /// once.
    public func request(_ payload: [UInt8], to subject: String, timeout: Duration, completion: @escaping Completion) {
        request(payload, to: subject, timeout: timeout, parts: { _ in 1 }) { result in completion(result.map { $0[0] }) }
    }

    /// Sends `payload` to `subject` for an answer that may come as several messages (one larger
    /// than the servers' `max_payload`, cut by the responder): `parts` reads from the first
    /// message how many make the answer, and `completion` gets them in order (the servers keep
    /// one publisher's messages to one subscriber in order) or the failure, once; `timeout` is
    /// for the whole answer.
    public func request(_ payload: [UInt8], to subject: String, timeout: Duration, parts: @escaping (NATSMessage) -> Int,
                        completion: @escaping (Result<[NATSMessage], Failure>) -> Void) {
        lastID += 1
        let id = lastID
        do {
            try connection.publish(payload, to: subject, reply: "\(inbox).\(id)")
        } catch {
            return completion(.failure(.notSent(error)))
        }
        let timer = LoopTimer(loop: loop) { [weak self] in
            self?.finish(id, with: .failure(.timedOut(subject: subject, after: timeout)))
        }
        timer.schedule(after: timeout)
        pending[id] = Pending(subject: subject, timer: timer, parts: parts, completion: completion)
    }

    /// Requests still waiting for their answer.
    public var outstanding: Int { pending.count }

    /// Stops waiting for the answers to every request sent to `subject`: each completes now with
    /// ``Failure/abandoned(subject:)``, and an answer arriving later is dropped. On the loop.
    public func abandon(subject: String) {
        for id in pending.filter({ $0.value.subject == subject }).keys.sorted() {
            finish(id, with: .failure(.abandoned(subject: subject)))
        }
    }

    private func answered(_ answer: NATSMessage) {
        guard let id = answer.subject.split(separator: ".").last.flatMap({ UInt64($0) }), var request = pending[id] else { return }
        // A status-only message with 503 is the servers saying nobody subscribes.
        if request.received.isEmpty, answer.headers["Status"] == "503", answer.payload.isEmpty {
            return finish(id, with: .failure(.noResponders(subject: request.subject)))
        }
        request.received.append(answer)
        guard request.received.count >= request.parts(request.received[0]) else {
            pending[id] = request
            return
        }
        finish(id, with: .success(request.received))
    }

    private func finish(_ id: UInt64, with result: Result<[NATSMessage], Failure>) {
        guard let request = pending.removeValue(forKey: id) else { return }
        request.timer.cancel()
        request.completion(result)
    }
}
