import Dispatch
import Synchronization
import TouchlineRuntime

/// The answer of one feed export, written by its export thread a piece at a time.
///
/// The first piece starts the answer: `200` with `Content-Type: application/x-ndjson`, streamed
/// (chunked) to the client, so anything that fails before it is still a whole error answer.
/// Each ``write(_:)`` blocks the export thread until the connection has handed the piece to the
/// socket (``HTTPResponseStream/whenDrained(_:)``): the export never reads ahead of its client,
/// and memory holds one piece whatever the feed's length. A client that stops reading is cut by
/// the server's write deadline; one that leaves, or a server shutting down, ends the export at
/// its next piece. A failure after the first piece cuts the transfer (no last chunk,
/// ``HTTPResponseStream/cutsWhenEnded``), so no client takes a part for the whole feed.
///
/// A request handed over by another gateway of a cluster has no connection to stream to: its
/// answer is gathered whole and sent at the end (it travels back in parts, ``ForwardedResponse``).
///
/// The thread side (``write(_:)``, ``end(_:events:)``) runs on the export thread; everything
/// else on the request's loop, which owns the stream.
final class FeedExportOutput: @unchecked Sendable {
    enum Outcome: String {
        case complete
        case clientGone = "client_gone"
        case failed
    }

    private let request: HTTPRequest
    private let loop: EventLoop
    /// Runs once on the loop when the export has ended, with its outcome, events and bytes.
    private let ended: (Outcome, Int, Int) -> Void

    // Confined to the loop.
    private var started = false
    private var stream: HTTPResponseStream?
    /// The whole answer, for a request without a connection.
    private var gathered: [UInt8]?
    private var isGone = false
    /// True while the export thread waits for its piece to be taken.
    private var waiting = false
    private var bytes = 0

    // The hand-off to the export thread.
    private let handedOver = DispatchSemaphore(value: 0)
    private let accepted = Mutex(false)

    init(request: HTTPRequest, ended: @escaping (Outcome, Int, Int) -> Void) {
        self.request = request
        loop = request.loop
        self.ended = ended
    }

    static let headers: [(name: String, value: String)] = [("Content-Type", "application/x-ndjson")]

    // MARK: The export thread

    /// Hands `piece` to the client and waits until it is written; false when the client is gone
    /// (or the gateway is stopping): the export should stop reading.
    func write(_ piece: [UInt8]) -> Bool {
        do { try loop.sync { self.deliver(piece) } } catch { return false }
        handedOver.wait()
        return accepted.withLock { $0 }
    }

    /// The export is over: every piece written (`success`), or `failure` answered, or cut.
    func end(_ result: Result<Void, HTTPError>, events: Int) {
        loop.execute { self.finish(result, events: events) }
    }

    // MARK: The loop

    private func deliver(_ piece: [UInt8]) {
        waiting = true
        if !started { start() }
        guard !isGone else { return taken(false) }
        bytes += piece.count
        if gathered != nil {
            gathered! += piece
            return taken(true)
        }
        guard let stream, stream.write(piece) else { return gone() }
        stream.whenDrained { [self] in taken(true) }
    }

    private func start() {
        started = true
        if let stream = request.startStream(headers: Self.headers, onClose: { [self] in gone() }) {
            stream.cutsWhenEnded = true
            self.stream = stream
        } else if request.isPending {
            gathered = []
        } else {
            isGone = true
        }
    }

    private func taken(_ written: Bool) {
        guard waiting else { return }
        waiting = false
        accepted.withLock { $0 = written }
        handedOver.signal()
    }

    /// The client left, stopped reading, or the server is shutting down.
    private func gone() {
        isGone = true
        stream = nil
        taken(false)
    }

    private func finish(_ result: Result<Void, HTTPError>, events: Int) {
        let outcome: Outcome
        switch result {
        case _ where isGone:
            outcome = .clientGone
        case .success:
            outcome = .complete
            if let gathered {
                request.respond(HTTPResponse(status: 200, headers: Self.headers, body: gathered))
            } else {
                stream?.finish()
            }
        case .failure(let error):
            outcome = .failed
            if let stream {
                stream.abort()
            } else {
                request.respond(error.response)
            }
        }
        gathered = nil
        stream = nil
        ended(outcome, events, bytes)
    }
}
