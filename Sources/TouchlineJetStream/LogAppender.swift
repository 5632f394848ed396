import NATS
import TouchlineRuntime
import TouchlineStore

/// Appends to one log stream by compare-and-set on the stream's last sequence, the way every
/// fenced log of this backend is written: a channel partition's log (``JetStreamChannelStore``)
/// and a registry partition's (``RegistryPartition``). The condition is the stream's, not the
/// subject's: only the stream's holds against a write still in flight on a replicated stream
/// (docs/cluster.md, "Compare-and-set on a replicated stream").
///
/// - **A lost answer is not a failure**: the publish is repeated with the same message id until
///   `retryLimit` has passed since the write began. A repeat is refused for its expected last
///   sequence when the first attempt was stored (current servers check the sequence before the
///   message id; 2.9 answered a duplicate), so after a lost answer a refusal is not taken at its
///   word: the message at the sequence the write expected to take is read, and if it carries
///   this write's id, the write was stored there.
/// - **Fenced**: each attempt, repeats included, is sent only while `refusal` says nothing.
/// - A failure says whether the log may now hold what the writer has not read
///   (``Failure/logMayHaveMoved``): it is read again before the next write.
///
/// One write is in flight at a time (each expects the one before), so one timer serves the
/// repeats. Confined to `loop` (the closures that capture it run there, hence unchecked);
/// completions run there.
final class LogAppender: @unchecked Sendable {
    struct Failure: Error {
        let error: StoreError
        /// Another write, or this one whose answer was lost, may be stored: read the log again.
        let logMayHaveMoved: Bool
    }

    let stream: String
    let subject: String
    /// How the log and its writes are named in errors: "partition 3's log", "the batch".
    private let logName: String
    private let writeName: String
    private let jetStream: any JetStreamClient
    private let loop: EventLoop
    private let retryLimit: Duration
    /// The JetStream API requests of the writer (reading a message back); nil when the
    /// connection cannot take them now.
    private let requests: @Sendable () -> NATSRequests?
    private var retryTimer: LoopTimer?

    init(stream: String, subject: String, logName: String, writeName: String, jetStream: any JetStreamClient, loop: EventLoop,
         retryLimit: Duration, requests: @escaping @Sendable () -> NATSRequests?) {
        self.stream = stream
        self.subject = subject
        self.logName = logName
        self.writeName = writeName
        self.jetStream = jetStream
        self.loop = loop
        self.retryLimit = retryLimit
        self.requests = requests
    }

    /// Logs `bytes` after the log's message at `expected` (0: an empty log), to `subject` (nil:
    /// the log's own; another of its stream's subjects, a snapshot's part say); answers the
    /// sequence it took. `unanswered`: an earlier attempt of this write went without an answer.
    func append(_ bytes: [UInt8], to subject: String? = nil, headers: [String: String] = [:], expected: UInt64, id: String,
                since: ContinuousClock.Instant, unanswered: Bool = false, refusal: @escaping @Sendable () -> StoreError?,
                then done: @escaping @Sendable (Result<UInt64, Failure>) -> Void) {
        if let refused = refusal() { return done(.failure(Failure(error: refused, logMayHaveMoved: false))) }
        let conditions = JetStream.PublishConditions(messageID: id, expectedLastSequence: expected)
        jetStream.publish(bytes, to: subject ?? self.subject, headers: headers, conditions: conditions, loop: loop) { [self] result in
            switch result {
            case .success(let acknowledgement):
                done(.success(acknowledgement.sequence))
            case .failure(let error) where error.isWrongLastSequence && unanswered:
                storedEarlier(id, at: expected + 1, refusal: error, then: done)
            case .failure(let error) where error.isWrongLastSequence:
                done(.failure(Failure(error: .storageFailure("\(logName) was written since this gateway read it (by another, or a write of its own whose answer was lost): \(error)"),
                                      logMayHaveMoved: true)))
            case .failure(let error) where error.isStreamFull:
                done(.failure(Failure(error: .full("\(logName) is full (store.limits): \(error)"), logMayHaveMoved: false)))
            case .failure(let error) where error.jetStreamCode != 0:
                // The stream answered and refused: trying again would change nothing.
                done(.failure(Failure(error: .storageFailure("the cluster refused \(writeName): \(error)"), logMayHaveMoved: false)))
            case .failure(let error):
                guard ContinuousClock.now - since < retryLimit else {
                    return done(.failure(Failure(error: .storageFailure("the cluster did not store \(writeName) within \(retryLimit): \(error)"),
                                                 logMayHaveMoved: true)))
                }
                let timer = LoopTimer(loop: loop) { [self] in
                    retryTimer = nil
                    append(bytes, to: subject, headers: headers, expected: expected, id: id, since: since, unanswered: true, refusal: refusal,
                           then: done)
                }
                retryTimer = timer
                timer.schedule(after: .milliseconds(100))
            }
        }
    }

    /// After a lost answer and a refused repeat: the write was stored if the log's message at
    /// `sequence` carries its `id`; otherwise another write took that place.
    private func storedEarlier(_ id: String, at sequence: UInt64, refusal: NATSError,
                               then done: @escaping @Sendable (Result<UInt64, Failure>) -> Void) {
        guard let requests = requests() else {
            return done(.failure(Failure(error: .storageFailure("\(logName): cannot ask whether a write whose answer was lost was stored; reading it again"),
                                         logMayHaveMoved: true)))
        }
        requests.messageID(in: stream, at: sequence, timeout: .seconds(5)) { [logName] found in
            switch found {
            case .success(let stored) where stored == id:
                done(.success(sequence))
            case .success:
                done(.failure(Failure(error: .storageFailure("\(logName) was written since this gateway read it (by another gateway): \(refusal)"),
                                      logMayHaveMoved: true)))
            case .failure(let error):
                done(.failure(Failure(error: .storageFailure("\(logName): a write whose answer was lost may be stored (\(error)); reading it again"),
                                      logMayHaveMoved: true)))
            }
        }
    }
}
