import HTTP2
import TouchlineCore
import TouchlineRuntime

/// Typed APNs calls for one app, on top of two HTTP/2 senders: one for the push host (device
/// pushes and broadcasts), one for the channel-management host.
///
/// **Loop-confined** (`@unchecked Sendable` only so closures can carry it onto its loop): call
/// every method on ``loop``'s thread; completions run there too, exactly once. The senders must
/// belong to the same loop. The async wrappers in `APNsClient+Async.swift` hop onto the loop
/// for control paths and tests.
///
/// **Retry policy.** The client retries exactly one thing itself: a `403 ExpiredProviderToken`
/// renews the shared ``ProviderToken`` and sends the request once more. When the 20-minute rule
/// forbids the renewal (APNs's clock is ahead of ours), the token is in a renewal hold: that
/// request and every new one are *held* here, not failed and not sent with a token APNs refuses,
/// and go out with the new token as soon as the rule allows (checked at least every second, so
/// a wall clock that steps is followed, and by the first request after the hold), oldest first.
/// Callers bound what they have in flight, and so the hold. Everything else comes back as an ``APNsError`` with an ``APNsDisposition``, and
/// the caller decides, because only the caller knows whether a retry still makes sense: the
/// channel engine coalesces (a newer state supersedes a failed one, and re-sending an old state
/// after back-off would publish it out of order), the personal queue keeps durable jobs with
/// their own back-off, and channel creation is not idempotent (a lost answer must be reconciled
/// with ``listChannels(requestID:completion:)``, not re-posted). Retries on fresh connections
/// after GOAWAY or `REFUSED_STREAM` happen below, in the connection pool.
public final class APNsClient: @unchecked Sendable {
    public let loop: EventLoop
    public let encoder: APNsRequestEncoder
    public let providerToken: ProviderToken
    /// The token the pools' connections carry; nil: senders that are not renewed on a new token.
    private let connectionToken: APNsConnectionToken?
    private let pushSender: any HTTP2RequestSender
    private let broadcastSender: any HTTP2RequestSender
    private let managementSender: any HTTP2RequestSender
    /// Told of every request's end (an answer or a transport failure) with how long it took:
    /// the hook for metrics. Set and called on ``loop``.
    public var exchangeObserver: ((APNsExchange) -> Void)?
    /// Requests waiting for the provider token's renewal hold to end, oldest first.
    private var held: [HeldRequest] = []
    private var holdTimer: LoopTimer?
    /// The longest the client waits before asking the token again during a hold.
    static let holdRecheckInterval: Duration = .seconds(1)

    /// A request kept during a renewal hold: how to send it again, and how to fail it at shutdown.
    private struct HeldRequest {
        let resend: () -> Void
        let fail: () -> Void
    }

    /// Requests held until the provider token may be renewed (a gauge for metrics). Loop only.
    public var heldRequestCount: Int { held.count }

    /// - Parameters:
    ///   - broadcastSender: where broadcasts go; nil: `pushSender` (the same host).
    ///   - connectionToken: the token the senders' connections carry, which renews them when
    ///     the client signs with another (``APNsConnections`` makes one).
    public init(encoder: APNsRequestEncoder, providerToken: ProviderToken, connectionToken: APNsConnectionToken? = nil,
                pushSender: any HTTP2RequestSender, broadcastSender: (any HTTP2RequestSender)? = nil,
                managementSender: any HTTP2RequestSender, loop: EventLoop) {
        self.encoder = encoder
        self.providerToken = providerToken
        self.connectionToken = connectionToken
        self.pushSender = pushSender
        self.broadcastSender = broadcastSender ?? pushSender
        self.managementSender = managementSender
        self.loop = loop
    }

    /// A client for `configuration`'s bundle id and environment; the token is shared and made
    /// once per process (``ProviderToken/init(configuration:clock:)``).
    public convenience init(configuration: APNsConfiguration, providerToken: ProviderToken, connectionToken: APNsConnectionToken? = nil,
                            pushSender: any HTTP2RequestSender, broadcastSender: (any HTTP2RequestSender)? = nil,
                            managementSender: any HTTP2RequestSender, loop: EventLoop) throws(APNsConfigurationError) {
        self.init(encoder: try APNsRequestEncoder(bundleID: configuration.bundleID, environment: configuration.environment,
                                                  broadcastEndpoint: configuration.broadcastHost),
                  providerToken: providerToken, connectionToken: connectionToken, pushSender: pushSender, broadcastSender: broadcastSender,
                  managementSender: managementSender, loop: loop)
    }

    /// Sends one Live Activity push to one device token; with `fence`, only if it still holds
    /// when the request's HEADERS frame is written (else ``HTTP2RequestError/withheld``).
    /// A fence that stamps request ids names itself in `apns-id` when the push has none.
    public func send(_ push: LiveActivityPush, fence: (any SideEffectFence)? = nil, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        var push = push
        if push.apnsID == nil { push.apnsID = fence?.requestID }
        perform(Result { () throws(APNsError) in
            var request = try encoder.request(for: push)
            request.fence = fence
            return request
        }, endpoint: .device, sentID: push.apnsID, decode: Self.plainResponse, completion: completion)
    }

    /// Publishes one update to a broadcast channel; with `fence`, only if it still holds when
    /// the request's HEADERS frame is written (else ``HTTP2RequestError/withheld``).
    /// A fence that stamps request ids names itself in `apns-request-id` when the broadcast has none.
    public func broadcast(_ broadcast: Broadcast, fence: (any SideEffectFence)? = nil,
                          completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        var broadcast = broadcast
        if broadcast.requestID == nil { broadcast.requestID = fence?.requestID }
        perform(Result { () throws(APNsError) in
            var request = try encoder.request(for: broadcast)
            request.fence = fence
            return request
        }, endpoint: .broadcast, sentID: broadcast.requestID, decode: Self.plainResponse, completion: completion)
    }

    /// Creates a channel and returns its id. Not idempotent: if the answer is lost, look for the
    /// new channel with ``listChannels(requestID:completion:)`` before creating another.
    /// With `fence`, only if it still holds when the request's HEADERS frame is written.
    public func createChannel(policy: ChannelStorage, requestID: String? = nil, fence: (any SideEffectFence)? = nil,
                              completion: @escaping (Result<String, APNsError>) -> Void) {
        let requestID = requestID ?? fence?.requestID
        var request = encoder.createChannelRequest(policy: policy, requestID: requestID)
        request.fence = fence
        perform(.success(request), endpoint: .channelManagement, sentID: requestID, decode: Self.createdChannelID, completion: completion)
    }

    /// Reads a channel's storage policy.
    public func readChannel(_ channelID: String, requestID: String? = nil,
                            completion: @escaping (Result<APNsChannelConfiguration, APNsError>) -> Void) {
        perform(Result { () throws(APNsError) in try encoder.readChannelRequest(channelID: channelID, requestID: requestID) },
                endpoint: .channelManagement, sentID: requestID, decode: { response in
                    guard let configuration = ChannelBodies.configuration(response.body, channelID: channelID) else {
                        return .failure(Self.unusable(response, "body is not a channel configuration"))
                    }
                    return .success(configuration)
                }, completion: completion)
    }

    /// Deletes a channel for good (its id never comes back). With `fence`, only if it still
    /// holds when the request's HEADERS frame is written.
    public func deleteChannel(_ channelID: String, requestID: String? = nil, fence: (any SideEffectFence)? = nil,
                              completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        let requestID = requestID ?? fence?.requestID
        perform(Result { () throws(APNsError) in
            var request = try encoder.deleteChannelRequest(channelID: channelID, requestID: requestID)
            request.fence = fence
            return request
        }, endpoint: .channelManagement, sentID: requestID, decode: Self.plainResponse, completion: completion)
    }

    /// Lists the ids of every channel of the app in this environment.
    public func listChannels(requestID: String? = nil, completion: @escaping (Result<[String], APNsError>) -> Void) {
        perform(.success(encoder.listChannelsRequest(requestID: requestID)), endpoint: .channelManagement, sentID: requestID,
                decode: Self.channelIDs, completion: completion)
    }

    // MARK: - Sending with the provider token

    /// Signs `request` with the current token, sends it, and turns a 2xx answer into `T` with
    /// `decode`; a failure becomes an ``APNsError``, after one token renewal where it applies.
    private func perform<T>(_ request: Result<HTTP2Request, APNsError>, endpoint: APNsEndpointKind, sentID: String?,
                            decode: @escaping (HTTP2Response) -> Result<T, APNsError>,
                            completion: @escaping (Result<T, APNsError>) -> Void) {
        assert(loop.inEventLoop, "APNsClient used off its loop")
        switch request {
        case .failure(let error): completion(.failure(error))
        case .success(let unsigned):
            attempt(unsigned, endpoint: endpoint, sentID: sentID, mayRetry: true, decode: decode, completion: completion)
        }
    }

    private func attempt<T>(_ unsigned: HTTP2Request, endpoint: APNsEndpointKind, sentID: String?, mayRetry: Bool,
                            decode: @escaping (HTTP2Response) -> Result<T, APNsError>,
                            completion: @escaping (Result<T, APNsError>) -> Void) {
        let bearer: String
        do {
            switch try providerToken.authorization() {
            case .bearer(let current):
                bearer = current
                connectionToken?.use(current)
                // A hold that just ended: the older requests go first.
                if !held.isEmpty { releaseHeldRequests() }
            case .hold(let until):
                hold(until: until, resend: { [self] in
                    attempt(unsigned, endpoint: endpoint, sentID: sentID, mayRetry: mayRetry, decode: decode, completion: completion)
                }, fail: { completion(.failure(APNsError(transport: .shutdown, endpoint: endpoint, sentID: sentID))) })
                return
            }
        } catch {
            completion(.failure(APNsError(endpoint: endpoint, failure: .providerToken(error), disposition: .configuration, requestID: sentID)))
            return
        }
        var request = unsigned
        request.headers.add(Self.authorizationHeader, bearer, indexed: true)
        let sender = switch endpoint {
        case .channelManagement: managementSender
        case .broadcast: broadcastSender
        case .device: pushSender
        }
        let started = ContinuousClock.now
        sender.send(request) { [self] result in
            let error: APNsError
            switch result {
            case .success(let response) where (200..<300).contains(response.status):
                exchangeObserver?(APNsExchange(endpoint: endpoint, outcome: .answered(status: response.status, reason: nil),
                                               duration: ContinuousClock.now - started))
                completion(decode(response))
                return
            case .success(let response): error = APNsError(rejection: response, endpoint: endpoint)
            case .failure(let transportError): error = APNsError(transport: transportError, endpoint: endpoint, sentID: sentID)
            }
            exchangeObserver?(APNsExchange(endpoint: endpoint, failure: error, duration: ContinuousClock.now - started))
            guard error.disposition == .refreshTokenAndRetry else {
                completion(.failure(error))
                return
            }
            let invalidation: ProviderToken.Invalidation
            do throws(APNsConfigurationError) {
                invalidation = try providerToken.invalidate(observedToken: bearer)
            } catch let signing {
                completion(.failure(APNsError(endpoint: endpoint, failure: .providerToken(signing), disposition: .configuration,
                                              requestID: error.requestID)))
                return
            }
            guard mayRetry else {
                // Its one retry was rejected too: the caller decides (the token may be far off).
                completion(.failure(Self.refusedAgain(error, invalidation)))
                return
            }
            // Sent once more with the new token: at once, or when the renewal hold ends (then
            // `authorization()` holds it like any new request).
            attempt(unsigned, endpoint: endpoint, sentID: sentID, mayRetry: false, decode: decode, completion: completion)
        }
    }

    /// The header that carries the provider token.
    static let authorizationHeader: StaticString = "authorization"

    /// The error of a request whose retry was rejected as expired as well.
    private static func refusedAgain(_ error: APNsError, _ invalidation: ProviderToken.Invalidation) -> APNsError {
        guard case .refused(let notBefore) = invalidation else { return error }
        var refused = error
        refused.disposition = .configuration
        refused.detail = "a token younger than 20 minutes was rejected as expired again, so the local clock is far behind "
            + "APNs's (check NTP); the next token may be made at \(notBefore.seconds)"
        return refused
    }

    // MARK: - Renewal hold

    /// Keeps a request until the renewal hold ends at `until`.
    private func hold(until: UnixTime, resend: @escaping () -> Void, fail: @escaping () -> Void) {
        held.append(HeldRequest(resend: resend, fail: fail))
        armHoldTimer(until: until)
    }

    private func armHoldTimer(until: UnixTime) {
        let timer = holdTimer ?? LoopTimer(loop: loop) { [unowned self] in releaseHeldRequests() }
        holdTimer = timer
        guard !timer.isScheduled else { return }
        timer.schedule(after: min(max(.zero, until - providerToken.clock.now()), Self.holdRecheckInterval))
    }

    /// Sends the held requests again, oldest first, once the hold is over; else waits on.
    private func releaseHeldRequests() {
        if let until = providerToken.renewalHold, providerToken.clock.now() < until {
            armHoldTimer(until: until)
            return
        }
        let waiting = held
        held.removeAll()
        for request in waiting { request.resend() }
    }

    /// Fails every held request with `.shutdown`: the client is being shut down. Loop only.
    public func failHeldRequests() {
        holdTimer?.cancel()
        let waiting = held
        held.removeAll()
        for request in waiting { request.fail() }
    }

    // MARK: - Decoding successful answers

    private static func plainResponse(_ response: HTTP2Response) -> Result<APNsResponse, APNsError> {
        .success(APNsResponse(response))
    }

    private static func createdChannelID(_ response: HTTP2Response) -> Result<String, APNsError> {
        guard let channelID = response.header("apns-channel-id"), !channelID.isEmpty else {
            return .failure(unusable(response, "no apns-channel-id header; the channel may exist anyway, look for it with listChannels"))
        }
        return .success(channelID)
    }

    private static func channelIDs(_ response: HTTP2Response) -> Result<[String], APNsError> {
        guard let ids = ChannelBodies.channelIDs(response.body) else {
            return .failure(unusable(response, "body is not {\"channels\": [...]}"))
        }
        return .success(ids)
    }

    private static func unusable(_ response: HTTP2Response, _ detail: String) -> APNsError {
        APNsError(endpoint: .channelManagement, failure: .unexpectedResponse(status: response.status, detail: detail),
                  disposition: .drop, requestID: response.header("apns-request-id"))
    }
}
