import HTTP2
import TouchlineCore

/// Turns typed APNs requests into ``HTTP2Request``s for one app in one environment.
///
/// Everything that is the same for every request of a kind (method, `:authority`, push type,
/// topic, paths that depend only on the bundle id) is built once here into shared
/// ``HeaderTemplate``s; per request only the path of a device push is concatenated and the
/// varying values go into inline ``DynamicHeaders``. The `authorization` header is left out:
/// ``APNsClient`` adds it when sending, so a retry can carry a renewed token.
///
/// Requests APNs would certainly reject (oversized payloads, bad collapse ids, empty tokens) are
/// refused here with the reason APNs would give, so they never use a stream.
public final class APNsRequestEncoder: Sendable {
    public let bundleID: String
    public let environment: APNsEnvironment
    /// Where broadcasts go (their `:authority`): the push host unless configured otherwise.
    public let broadcastEndpoint: APNsEndpoint

    private let deviceTemplate: HeaderTemplate
    private let broadcastTemplate: HeaderTemplate
    private let createChannelTemplate: HeaderTemplate
    private let readChannelTemplate: HeaderTemplate
    private let deleteChannelTemplate: HeaderTemplate
    private let listChannelsTemplate: HeaderTemplate
    private let broadcastPath: String
    private let channelsPath: String
    private let allChannelsPath: String

    /// The suffix Live Activity device pushes need on `apns-topic`.
    public static let liveActivityTopicSuffix = ".push-type.liveactivity"

    public init(bundleID: String, environment: APNsEnvironment, broadcastEndpoint: APNsEndpoint? = nil) throws(APNsConfigurationError) {
        try Self.validate(bundleID: bundleID)
        self.bundleID = bundleID
        self.environment = environment
        self.broadcastEndpoint = broadcastEndpoint ?? environment.pushEndpoint
        let push = environment.pushEndpoint.authority
        let manage = environment.managementEndpoint.authority
        let json = HTTP2Header("content-type", "application/json")
        let liveActivity = HTTP2Header("apns-push-type", "liveactivity")
        deviceTemplate = HeaderTemplate(method: .post, authority: push, headers: [
            liveActivity, HTTP2Header("apns-topic", bundleID + Self.liveActivityTopicSuffix), json,
        ])
        broadcastTemplate = HeaderTemplate(method: .post, authority: self.broadcastEndpoint.authority, headers: [liveActivity, json])
        createChannelTemplate = HeaderTemplate(method: .post, authority: manage, headers: [json])
        readChannelTemplate = HeaderTemplate(method: .get, authority: manage)
        deleteChannelTemplate = HeaderTemplate(method: .delete, authority: manage)
        listChannelsTemplate = HeaderTemplate(method: .get, authority: manage)
        broadcastPath = "/4/broadcasts/apps/\(bundleID)"
        channelsPath = "/1/apps/\(bundleID)/channels"
        allChannelsPath = "/1/apps/\(bundleID)/all-channels"
    }

    /// `POST /3/device/{token}` with `apns-priority`, and `apns-expiration`, `apns-id`,
    /// `apns-collapse-id` when set.
    public func request(for push: LiveActivityPush) throws(APNsError) -> HTTP2Request {
        try Self.check(payload: push.payload, limit: LiveActivityPush.maximumPayloadSize, endpoint: .device)
        guard !push.deviceToken.isEmpty else { throw .invalid(.missingDeviceToken, "empty device token", endpoint: .device) }
        guard HexBytes.isWholeBytes(push.deviceToken) else {
            throw .invalid(.badDeviceToken, "device token is not an even-length hex string", endpoint: .device)
        }
        var headers = DynamicHeaders()
        headers.add("apns-priority", push.priority.headerValue, indexed: true)
        if let expiration = push.expiration { Self.add(expiration, to: &headers) }
        if let apnsID = push.apnsID { headers.add("apns-id", apnsID) }
        if let collapseID = push.collapseID {
            guard collapseID.utf8.count <= LiveActivityPush.maximumCollapseIDSize else {
                throw .invalid(.badCollapseId, "apns-collapse-id is \(collapseID.utf8.count) bytes, the limit is \(LiveActivityPush.maximumCollapseIDSize)", endpoint: .device)
            }
            headers.add("apns-collapse-id", collapseID)
        }
        return HTTP2Request(template: deviceTemplate, path: "/3/device/" + push.deviceToken, headers: headers, body: push.payload)
    }

    /// `POST /4/broadcasts/apps/{bundleId}` with `apns-channel-id` (indexed: a live channel is
    /// hot), `apns-expiration`, `apns-priority` and `apns-request-id` when set; no `apns-topic`.
    public func request(for broadcast: Broadcast) throws(APNsError) -> HTTP2Request {
        try Self.check(payload: broadcast.payload, limit: Broadcast.maximumPayloadSize, endpoint: .broadcast)
        guard !broadcast.channelID.isEmpty else { throw .invalid(.missingChannelId, "empty channel id", endpoint: .broadcast) }
        var headers = DynamicHeaders()
        headers.add("apns-channel-id", broadcast.channelID, indexed: true)
        Self.add(broadcast.expiration, to: &headers)
        headers.add("apns-priority", broadcast.priority.headerValue, indexed: true)
        if let requestID = broadcast.requestID { headers.add("apns-request-id", requestID) }
        return HTTP2Request(template: broadcastTemplate, path: broadcastPath, headers: headers, body: broadcast.payload)
    }

    /// `POST /1/apps/{bundleId}/channels` with `{"message-storage-policy": N, "push-type": "LiveActivity"}`.
    public func createChannelRequest(policy: ChannelStorage, requestID: String? = nil) -> HTTP2Request {
        HTTP2Request(template: createChannelTemplate, path: channelsPath, headers: Self.requestIDHeaders(requestID),
                     body: Array(#"{"message-storage-policy":\#(policy.messageStoragePolicy),"push-type":"LiveActivity"}"#.utf8))
    }

    /// `GET /1/apps/{bundleId}/channels` with `apns-channel-id`.
    public func readChannelRequest(channelID: String, requestID: String? = nil) throws(APNsError) -> HTTP2Request {
        try channelRequest(readChannelTemplate, channelID: channelID, requestID: requestID)
    }

    /// `DELETE /1/apps/{bundleId}/channels` with `apns-channel-id`.
    public func deleteChannelRequest(channelID: String, requestID: String? = nil) throws(APNsError) -> HTTP2Request {
        try channelRequest(deleteChannelTemplate, channelID: channelID, requestID: requestID)
    }

    /// `GET /1/apps/{bundleId}/all-channels`.
    public func listChannelsRequest(requestID: String? = nil) -> HTTP2Request {
        HTTP2Request(template: listChannelsTemplate, path: allChannelsPath, headers: Self.requestIDHeaders(requestID))
    }

    private func channelRequest(_ template: HeaderTemplate, channelID: String, requestID: String?) throws(APNsError) -> HTTP2Request {
        guard !channelID.isEmpty else { throw .invalid(.missingChannelId, "empty channel id", endpoint: .channelManagement) }
        var headers = Self.requestIDHeaders(requestID)
        headers.add("apns-channel-id", channelID)
        return HTTP2Request(template: template, path: channelsPath, headers: headers)
    }

    private static func requestIDHeaders(_ requestID: String?) -> DynamicHeaders {
        var headers = DynamicHeaders()
        if let requestID { headers.add("apns-request-id", requestID) }
        return headers
    }

    /// `0` repeats on every request and is worth an HPACK slot; a timestamp is not.
    private static func add(_ expiration: APNsExpiration, to headers: inout DynamicHeaders) {
        headers.add("apns-expiration", expiration.headerValue, indexed: expiration == .immediately)
    }

    private static func check(payload: [UInt8], limit: Int, endpoint: APNsEndpointKind) throws(APNsError) {
        guard !payload.isEmpty else { throw .invalid(.payloadEmpty, "empty payload", endpoint: endpoint) }
        guard payload.count <= limit else {
            throw .invalid(.payloadTooLarge, "payload is \(payload.count) bytes, the limit is \(limit)", endpoint: endpoint)
        }
    }

    /// Letters, digits, `.` and `-` (Apple's bundle id alphabet), without a push-type suffix,
    /// which belongs in `apns-topic` only and would make broadcasts fail with `TopicDisallowed`.
    private static func validate(bundleID: String) throws(APNsConfigurationError) {
        guard !bundleID.isEmpty else { throw .invalidBundleID(bundleID, why: "it is empty") }
        let allowed = bundleID.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
        guard allowed else { throw .invalidBundleID(bundleID, why: "only letters, digits, '.' and '-' are allowed") }
        guard !bundleID.contains(".push-type.") else {
            throw .invalidBundleID(bundleID, why: "give the plain bundle id; the .push-type.liveactivity topic suffix is added where needed")
        }
    }
}
