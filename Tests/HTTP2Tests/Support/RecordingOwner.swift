import HTTP2
import TouchlineRuntime

/// An owner that records what a connection hands back (and fails those requests so the test can finish).
final class RecordingOwner: HTTP2ClientConnectionDelegate, @unchecked Sendable {
    private(set) var handedBack: [(path: String, reason: HTTP2RetryReason)] = []
    private(set) var drainingCount = 0
    private(set) var closes: [(error: TransportError?, wasReady: Bool)] = []

    func connectionDidBecomeReady(_ connection: HTTP2ClientConnection) {}

    func connectionDidStartDraining(_ connection: HTTP2ClientConnection) { drainingCount += 1 }

    func connection(_ connection: HTTP2ClientConnection, handsBack request: HTTP2PendingRequest, reason: HTTP2RetryReason) {
        handedBack.append((request.request.path, reason))
        request.complete(.failure(.retriesExhausted(last: "handed back: \(reason)")))
    }

    func connection(_ connection: HTTP2ClientConnection, didCloseWith error: TransportError?, wasReady: Bool) {
        closes.append((error, wasReady))
    }
}
