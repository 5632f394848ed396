import HTTP2
import TouchlineCore

/// Why an APNs request failed, with what to do about it.
public struct APNsError: Error, Sendable, CustomStringConvertible {
    public enum Failure: Sendable {
        /// APNs answered with an error status and reason.
        case rejected(status: Int, reason: APNsReason)
        /// The request was not sent: APNs would reject it with `reason` (checked locally).
        case invalidRequest(APNsReason, detail: String)
        /// No HTTP response: the connection, pool or server gave up on it.
        case transport(HTTP2RequestError)
        /// No provider token could be signed.
        case providerToken(APNsConfigurationError)
        /// A success status whose answer cannot be used (e.g. a create without `apns-channel-id`).
        case unexpectedResponse(status: Int, detail: String)
    }

    /// Which API the request was for.
    public var endpoint: APNsEndpointKind
    public var failure: Failure
    /// What the caller should do; see ``APNsDisposition``.
    public var disposition: APNsDisposition
    /// `apns-id` (device pushes) or `apns-request-id` (broadcast, channels): the server's echo,
    /// or the id sent when there was no response. Quote it in logs and support requests.
    public var requestID: String?
    /// `apns-unique-id` when APNs sent one.
    public var uniqueID: String?
    /// For 410: when APNs learned that the token is invalid, in milliseconds since the epoch.
    /// Delete the token only if it was not registered again after this moment.
    public var timestampMilliseconds: Int64?
    /// Extra context for logs (e.g. why a token renewal was refused).
    public var detail: String?

    public init(endpoint: APNsEndpointKind, failure: Failure, disposition: APNsDisposition, requestID: String? = nil,
                uniqueID: String? = nil, timestampMilliseconds: Int64? = nil, detail: String? = nil) {
        self.endpoint = endpoint
        self.failure = failure
        self.disposition = disposition
        self.requestID = requestID
        self.uniqueID = uniqueID
        self.timestampMilliseconds = timestampMilliseconds
        self.detail = detail
    }

    /// Classifies an error response; its body is APNs's `{"reason": ..., "timestamp": ...}`.
    public init(rejection response: HTTP2Response, endpoint: APNsEndpointKind) {
        let body = APNsErrorBody(response.body)
        let reason = body.reason.map(APNsReason.init) ?? .unknown("")
        let ids = APNsResponse(response)
        self.init(endpoint: endpoint, failure: .rejected(status: response.status, reason: reason),
                  disposition: .forRejection(status: response.status, reason: reason, endpoint: endpoint),
                  requestID: endpoint == .device ? ids.apnsID ?? ids.requestID : ids.requestID ?? ids.apnsID,
                  uniqueID: ids.uniqueID, timestampMilliseconds: body.timestamp)
    }

    /// A request that got no response; `sentID` is the request id it carried, if any.
    public init(transport error: HTTP2RequestError, endpoint: APNsEndpointKind, sentID: String?) {
        self.init(endpoint: endpoint, failure: .transport(error),
                  disposition: .forTransportFailure(error, endpoint: endpoint), requestID: sentID)
    }

    /// A request refused before sending because APNs would reject it with `reason`.
    static func invalid(_ reason: APNsReason, _ detail: String, endpoint: APNsEndpointKind) -> APNsError {
        APNsError(endpoint: endpoint, failure: .invalidRequest(reason, detail: detail),
                  disposition: .forRejection(status: reason.status ?? 400, reason: reason, endpoint: endpoint))
    }

    /// True when APNs provably did not process the request (never sent, or handed back by every
    /// connection tried: see `HTTP2RequestError.isUnprocessed`). Such a failure is not an answer,
    /// so callers bounding delivery attempts should not count it as one.
    public var isUnprocessed: Bool {
        if case .transport(let error) = failure { return error.isUnprocessed }
        return false
    }

    /// True when the request may have reached APNs but no answer came back (the response
    /// timeout, the connection lost after the request went out, a stream at or below a GOAWAY's
    /// last-stream-id that never completed, a drain or shutdown ending first): APNs may have
    /// delivered the push, or not. Sending it again may deliver it twice; only the caller knows
    /// whether that is harmless (a broadcast's latest state) or not (a push-to-start).
    public var isUnanswered: Bool {
        if case .transport(let error) = failure { return !error.isUnprocessed }
        return false
    }

    /// The HTTP status, when APNs answered.
    public var status: Int? {
        switch failure {
        case .rejected(let status, _), .unexpectedResponse(let status, _): status
        case .invalidRequest, .transport, .providerToken: nil
        }
    }

    /// APNs's reason, or the reason it would give for a request refused locally.
    public var reason: APNsReason? {
        switch failure {
        case .rejected(_, let reason), .invalidRequest(let reason, _): reason
        case .transport(.goaway(_, let name?)): APNsReason(name)
        case .transport, .providerToken, .unexpectedResponse: nil
        }
    }

    public var description: String {
        var text: String
        switch failure {
        case .rejected(let status, let reason): text = "APNs rejected the \(endpoint) with \(status) \(reason)"
        case .invalidRequest(let reason, let detail): text = "\(endpoint) not sent, APNs would answer \(reason): \(detail)"
        case .transport(let error): text = "\(endpoint) got no response: \(error)"
        case .providerToken(let error): text = "\(endpoint) not sent: \(error)"
        case .unexpectedResponse(let status, let detail): text = "unusable \(status) answer to the \(endpoint): \(detail)"
        }
        if let requestID { text += " [request \(requestID)]" }
        if let uniqueID { text += " [unique \(uniqueID)]" }
        if let timestampMilliseconds { text += " [invalid since \(timestampMilliseconds) ms]" }
        if let detail { text += "; \(detail)" }
        return text + " -> \(disposition)"
    }
}
