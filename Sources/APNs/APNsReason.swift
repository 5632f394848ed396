/// The `reason` string of an APNs error response (or of a GOAWAY payload).
///
/// Every reason of Apple's device, broadcast and channel-management tables, plus
/// `BadEnvironmentKeyInToken` (returned by APNs although missing from the tables) and
/// ``unknown(_:)`` for anything new, so a new reason never breaks parsing.
public enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    // 400
    case badCollapseId
    case badDeviceToken
    case badExpirationDate
    case badMessageId
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    case featureNotEnabled
    case missingChannelId
    case badChannelId
    case channelNotRegistered
    case cannotCreateChannelConfig
    case missingPushType
    case badRequestParams
    case badRequestPayload
    // 403
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIdInToken
    case topicMismatch
    case badEnvironmentKeyInToken
    // 404, 405
    case badPath
    case methodNotAllowed
    // 410
    case expiredToken
    case unregistered
    // 413
    case payloadTooLarge
    // 429
    case tooManyRequests
    case tooManyProviderTokenUpdates
    // 500, 503
    case internalServerError
    case serviceUnavailable
    case shutdown
    /// A reason this code does not know (or `""` when the body had none).
    case unknown(String)

    /// Every known reason, for tests and documentation.
    public static let allKnown: [APNsReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed, .featureNotEnabled, .missingChannelId, .badChannelId,
        .channelNotRegistered, .cannotCreateChannelConfig, .missingPushType, .badRequestParams, .badRequestPayload,
        .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
        .missingProviderToken, .unrelatedKeyIdInToken, .topicMismatch, .badEnvironmentKeyInToken,
        .badPath, .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge, .tooManyRequests,
        .tooManyProviderTokenUpdates, .internalServerError, .serviceUnavailable, .shutdown,
    ]

    private static let byName: [String: APNsReason] = {
        var table = Dictionary(uniqueKeysWithValues: allKnown.map { ($0.name, $0) })
        table["Service Unavailable"] = .serviceUnavailable  // as printed in Apple's broadcast table
        return table
    }()

    /// Parses the exact string APNs sends.
    public init(_ name: String) {
        self = Self.byName[name] ?? .unknown(name)
    }

    /// The string APNs sends, e.g. `"BadDeviceToken"`.
    public var name: String {
        switch self {
        case .badCollapseId: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageId: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .featureNotEnabled: "FeatureNotEnabled"
        case .missingChannelId: "MissingChannelId"
        case .badChannelId: "BadChannelId"
        case .channelNotRegistered: "ChannelNotRegistered"
        case .cannotCreateChannelConfig: "CannotCreateChannelConfig"
        case .missingPushType: "MissingPushType"
        case .badRequestParams: "BadRequestParams"
        case .badRequestPayload: "BadRequestPayload"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .unrelatedKeyIdInToken: "UnrelatedKeyIdInToken"
        case .topicMismatch: "TopicMismatch"
        case .badEnvironmentKeyInToken: "BadEnvironmentKeyInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .expiredToken: "ExpiredToken"
        case .unregistered: "Unregistered"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyRequests: "TooManyRequests"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .unknown(let name): name
        }
    }

    /// The status APNs pairs with this reason; used to classify a reason that arrives without
    /// one (in a GOAWAY). nil for ``unknown(_:)``.
    public var status: Int? {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
             .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
             .missingTopic, .payloadEmpty, .topicDisallowed, .featureNotEnabled, .missingChannelId, .badChannelId,
             .channelNotRegistered, .cannotCreateChannelConfig, .missingPushType, .badRequestParams, .badRequestPayload:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
             .missingProviderToken, .unrelatedKeyIdInToken, .topicMismatch, .badEnvironmentKeyInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyRequests, .tooManyProviderTokenUpdates: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        case .unknown: nil
        }
    }

    public var description: String { name.isEmpty ? "(no reason)" : name }
}
