/// The `reason` strings the mock answers with, spelled exactly as APNs does, with their status.
///
/// The mock keeps its own list rather than sharing the client's error type, so that a
/// misspelled or misclassified reason on either side shows up as a test failure.
public enum MockAPNsReason: String, Sendable, CaseIterable {
    // 400
    case badCollapseID = "BadCollapseId"
    case badDeviceToken = "BadDeviceToken"
    case badExpirationDate = "BadExpirationDate"
    case badMessageID = "BadMessageId"
    case badPriority = "BadPriority"
    case badTopic = "BadTopic"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    case duplicateHeaders = "DuplicateHeaders"
    case invalidPushType = "InvalidPushType"
    case missingDeviceToken = "MissingDeviceToken"
    case missingPushType = "MissingPushType"
    case missingTopic = "MissingTopic"
    case payloadEmpty = "PayloadEmpty"
    case topicDisallowed = "TopicDisallowed"
    case missingChannelID = "MissingChannelId"
    case badChannelID = "BadChannelId"
    case channelNotRegistered = "ChannelNotRegistered"
    case cannotCreateChannelConfig = "CannotCreateChannelConfig"
    case badRequestParams = "BadRequestParams"
    case badRequestPayload = "BadRequestPayload"
    // 403
    case expiredProviderToken = "ExpiredProviderToken"
    case invalidProviderToken = "InvalidProviderToken"
    case missingProviderToken = "MissingProviderToken"
    case topicMismatch = "TopicMismatch"
    // 404, 405
    case badPath = "BadPath"
    case methodNotAllowed = "MethodNotAllowed"
    // 410
    case unregistered = "Unregistered"
    // 413
    case payloadTooLarge = "PayloadTooLarge"
    // 429
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case tooManyRequests = "TooManyRequests"
    // 500, 503
    case internalServerError = "InternalServerError"
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"

    /// The HTTP status APNs pairs with this reason (the same on every endpoint).
    public var status: Int {
        switch self {
        case .expiredProviderToken, .invalidProviderToken, .missingProviderToken, .topicMismatch: 403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        default: 400
        }
    }
}

/// A rejection: the reason plus a sentence for humans (sent in a diagnostic header, never in
/// the JSON body, which carries exactly what APNs sends).
struct MockAPNsRejection: Error {
    var reason: MockAPNsReason
    var detail: String

    init(_ reason: MockAPNsReason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }
}
