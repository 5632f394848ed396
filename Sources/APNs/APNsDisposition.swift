import HTTP2

/// What the caller should do about a failed APNs request.
///
/// Apple does not classify its errors; this is Touchline's reading of the reference tables
/// (see docs/apns-errors.md for the full table with reasons).
///
/// | Status | Reason | Disposition |
/// |---|---|---|
/// | 400 | BadCollapseId, BadExpirationDate, BadMessageId, BadPriority, BadTopic, DuplicateHeaders, InvalidPushType, MissingTopic, MissingPushType, PayloadEmpty, MissingDeviceToken, MissingChannelId, BadChannelId, BadRequestParams, BadRequestPayload | drop |
/// | 400 | BadDeviceToken, DeviceTokenNotForTopic | drop (not tokenDead, see below) |
/// | 400 | TopicDisallowed, FeatureNotEnabled, CannotCreateChannelConfig | configuration |
/// | 400 | IdleTimeout | retryOnNewConnection |
/// | 400 | ChannelNotRegistered | channelGone |
/// | 403 | ExpiredProviderToken | refreshTokenAndRetry |
/// | 403 | BadCertificate, BadCertificateEnvironment, Forbidden, InvalidProviderToken, MissingProviderToken, UnrelatedKeyIdInToken, TopicMismatch, BadEnvironmentKeyInToken | configuration |
/// | 404, 405 | BadPath, MethodNotAllowed | drop |
/// | 410 | ExpiredToken, Unregistered | tokenDead (device endpoint) |
/// | 413 | PayloadTooLarge | drop |
/// | 429 | TooManyRequests | backOffToken (device), backOffChannel (broadcast), retryWithBackoff (management) |
/// | 429 | TooManyProviderTokenUpdates | configuration |
/// | 500 | InternalServerError | retryWithBackoff |
/// | 503 | ServiceUnavailable, Shutdown | retryOnNewConnection |
/// | other | unknown reason | by status: 403 configuration, 410 tokenDead (device), 429 as TooManyRequests, 503 retryOnNewConnection, other 5xx retryWithBackoff, other 4xx drop |
///
/// `BadDeviceToken` is `drop`, not `tokenDead`: APNs also sends it for a token of the other
/// environment, so a gateway pointed at the wrong environment would otherwise delete every token
/// it has. Only `410` (with its timestamp) is proof enough to delete; callers that want to clean
/// up malformed tokens can count `BadDeviceToken` per token.
public enum APNsDisposition: Sendable, Hashable, CustomStringConvertible {
    /// A server-side or transient failure: send again later, with exponential back-off.
    case retryWithBackoff
    /// The connection is going away or broke: send again, on another connection.
    case retryOnNewConnection
    /// The provider token was rejected as expired: renew it and send once more
    /// (``APNsClient`` does this itself).
    case refreshTokenAndRetry
    /// The device token is no longer valid (410): stop sending to it and delete it.
    case tokenDead
    /// The broadcast channel does not exist (deleted, or from the other environment): stop
    /// publishing to it; recreate it if the event is still running.
    case channelGone
    /// APNs throttles this device token: slow down for this token only.
    case backOffToken
    /// APNs throttles this channel: coalesce and publish less often on it.
    case backOffChannel
    /// The request itself is wrong (a bug, or data APNs will never accept): do not retry it.
    case drop
    /// Credentials, key, bundle or account setup is wrong: alert an operator; retrying will not
    /// help and hammering may get the server blocked.
    case configuration
    /// Never sent: the ownership it was decided under had moved by the moment it was due to
    /// leave (``HTTP2RequestError/withheld``). Neither retried nor counted here: whoever owns
    /// it now sends what is due.
    case withheld

    /// The disposition of an HTTP error response.
    public static func forRejection(status: Int, reason: APNsReason, endpoint: APNsEndpointKind) -> APNsDisposition {
        switch reason {
        case .badCollapseId, .badExpirationDate, .badMessageId, .badPriority, .badTopic, .duplicateHeaders,
             .invalidPushType, .missingTopic, .missingPushType, .payloadEmpty, .missingDeviceToken,
             .missingChannelId, .badChannelId, .badRequestParams, .badRequestPayload,
             .badDeviceToken, .deviceTokenNotForTopic, .badPath, .methodNotAllowed, .payloadTooLarge:
            .drop
        case .topicDisallowed, .featureNotEnabled, .cannotCreateChannelConfig,
             .badCertificate, .badCertificateEnvironment, .forbidden, .invalidProviderToken, .missingProviderToken,
             .unrelatedKeyIdInToken, .topicMismatch, .badEnvironmentKeyInToken, .tooManyProviderTokenUpdates:
            .configuration
        case .idleTimeout, .serviceUnavailable, .shutdown: .retryOnNewConnection
        case .channelNotRegistered: .channelGone
        case .expiredProviderToken: .refreshTokenAndRetry
        case .expiredToken, .unregistered: endpoint == .device ? .tokenDead : .drop
        case .tooManyRequests: throttled(endpoint)
        case .internalServerError: .retryWithBackoff
        case .unknown: forUnknownReason(status: status, endpoint: endpoint)
        }
    }

    /// The disposition of a request that got no HTTP response.
    ///
    /// A GOAWAY's reason counts only when it speaks about the connection or credentials
    /// (configuration, token, server state): a request-level reason in a GOAWAY may have been
    /// caused by another stream, so this request is simply sent again elsewhere.
    public static func forTransportFailure(_ error: HTTP2RequestError, endpoint: APNsEndpointKind) -> APNsDisposition {
        switch error {
        case .transport, .notConnected, .streamReset: return .retryOnNewConnection
        case .queueFull, .shutdown, .retriesExhausted, .timedOut: return .retryWithBackoff
        case .withheld: return .withheld
        case .goaway(_, let reasonName):
            guard let reasonName else { return .retryOnNewConnection }
            let reason = APNsReason(reasonName)
            guard let status = reason.status else { return .retryOnNewConnection }
            let disposition = forRejection(status: status, reason: reason, endpoint: endpoint)
            switch disposition {
            case .configuration, .refreshTokenAndRetry, .retryWithBackoff, .retryOnNewConnection: return disposition
            default: return .retryOnNewConnection
            }
        }
    }

    private static func throttled(_ endpoint: APNsEndpointKind) -> APNsDisposition {
        switch endpoint {
        case .device: .backOffToken
        case .broadcast: .backOffChannel
        case .channelManagement: .retryWithBackoff
        }
    }

    private static func forUnknownReason(status: Int, endpoint: APNsEndpointKind) -> APNsDisposition {
        switch status {
        case 403: .configuration
        case 410: endpoint == .device ? .tokenDead : .drop
        case 429: throttled(endpoint)
        case 503: .retryOnNewConnection
        case 408, 500...599: .retryWithBackoff
        default: .drop
        }
    }

    public var description: String {
        switch self {
        case .retryWithBackoff: "retry with back-off"
        case .retryOnNewConnection: "retry on a new connection"
        case .refreshTokenAndRetry: "renew the provider token and retry"
        case .tokenDead: "device token is dead"
        case .channelGone: "channel is gone"
        case .backOffToken: "back off this device token"
        case .backOffChannel: "back off this channel"
        case .drop: "drop (do not retry)"
        case .configuration: "configuration problem (alert operators)"
        case .withheld: "withheld (the ownership it was decided under moved)"
        }
    }
}
