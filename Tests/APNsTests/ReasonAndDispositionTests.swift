import APNs
import HTTP2
import Testing

/// One row of the reference's error tables (§5.1 device, §5.2 broadcast and channel management).
struct Row: Sendable, CustomTestStringConvertible {
    var status: Int
    var reason: String
    var endpoint: APNsEndpointKind
    var expected: APNsDisposition
    var testDescription: String { "\(status) \(reason) on \(endpoint)" }
}

private func rows(_ status: Int, _ reasons: [String], _ endpoint: APNsEndpointKind, _ expected: APNsDisposition) -> [Row] {
    reasons.map { Row(status: status, reason: $0, endpoint: endpoint, expected: expected) }
}

/// §5.1: every reason of the device table.
let deviceTable: [Row] = ([
    rows(400, ["BadCollapseId", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic", "DuplicateHeaders",
               "InvalidPushType", "MissingTopic", "PayloadEmpty", "MissingDeviceToken"], .device, .drop),
    rows(400, ["TopicDisallowed"], .device, .configuration),
    rows(400, ["BadDeviceToken", "DeviceTokenNotForTopic"], .device, .drop),
    rows(400, ["IdleTimeout"], .device, .retryOnNewConnection),
    rows(403, ["BadCertificate", "BadCertificateEnvironment", "Forbidden", "InvalidProviderToken", "MissingProviderToken",
               "UnrelatedKeyIdInToken", "BadEnvironmentKeyInToken"], .device, .configuration),
    rows(403, ["ExpiredProviderToken"], .device, .refreshTokenAndRetry),
    rows(404, ["BadPath"], .device, .drop),
    rows(405, ["MethodNotAllowed"], .device, .drop),
    rows(410, ["ExpiredToken", "Unregistered"], .device, .tokenDead),
    rows(413, ["PayloadTooLarge"], .device, .drop),
    rows(429, ["TooManyRequests"], .device, .backOffToken),
    rows(429, ["TooManyProviderTokenUpdates"], .device, .configuration),
    rows(500, ["InternalServerError"], .device, .retryWithBackoff),
    rows(503, ["ServiceUnavailable", "Shutdown"], .device, .retryOnNewConnection),
] as [[Row]]).flatMap { $0 }

/// §5.2: every reason of the broadcast and channel-management table, on both endpoints.
let broadcastTable: [Row] = [APNsEndpointKind.broadcast, .channelManagement].flatMap { endpoint -> [Row] in
    let throttled: APNsDisposition = endpoint == .broadcast ? .backOffChannel : .retryWithBackoff
    let groups: [[Row]] = [
        rows(400, ["FeatureNotEnabled", "CannotCreateChannelConfig", "TopicDisallowed"], endpoint, .configuration),
        rows(400, ["MissingChannelId", "BadChannelId", "BadExpirationDate", "BadPriority", "MissingPushType",
                   "InvalidPushType", "BadMessageId", "BadRequestParams", "BadRequestPayload", "PayloadEmpty"], endpoint, .drop),
        rows(400, ["ChannelNotRegistered"], endpoint, .channelGone),
        rows(403, ["BadCertificate", "BadCertificateEnvironment", "TopicMismatch", "MissingProviderToken",
                   "InvalidProviderToken"], endpoint, .configuration),
        rows(403, ["ExpiredProviderToken"], endpoint, .refreshTokenAndRetry),
        rows(404, ["BadPath"], endpoint, .drop),
        rows(405, ["MethodNotAllowed"], endpoint, .drop),
        rows(413, ["PayloadTooLarge"], endpoint, .drop),
        rows(429, ["TooManyRequests"], endpoint, throttled),
        rows(429, ["TooManyProviderTokenUpdates"], endpoint, .configuration),
        rows(500, ["InternalServerError"], endpoint, .retryWithBackoff),
        rows(503, ["ServiceUnavailable", "Service Unavailable", "Shutdown"], endpoint, .retryOnNewConnection),
    ]
    return groups.flatMap { $0 }
}

@Suite struct ReasonAndDispositionTests {
    @Test(arguments: deviceTable + broadcastTable)
    func everyDocumentedReasonParsesAndHasItsDisposition(_ row: Row) {
        let response = errorResponse(row.status, row.reason)
        let error = APNsError(rejection: response, endpoint: row.endpoint)
        #expect(error.reason != .unknown(row.reason), "reason \(row.reason) not recognised")
        #expect(error.reason?.status == row.status)
        #expect(error.status == row.status)
        #expect(error.disposition == row.expected)
        #expect(APNsDisposition.forRejection(status: row.status, reason: APNsReason(row.reason), endpoint: row.endpoint) == row.expected)
    }

    @Test func theTablesCoverEveryKnownReason() {
        let tested = Set((deviceTable + broadcastTable).map { APNsReason($0.reason) })
        #expect(tested == Set(APNsReason.allKnown))
    }

    @Test func reasonNamesRoundTrip() {
        for reason in APNsReason.allKnown { #expect(APNsReason(reason.name) == reason) }
        #expect(APNsReason("Service Unavailable") == .serviceUnavailable)
        #expect(APNsReason("SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsReason("SomethingNew").name == "SomethingNew")
        #expect(APNsReason("badDeviceToken") == .unknown("badDeviceToken"), "reasons are case-sensitive")
    }

    @Test(arguments: [
        (403, APNsEndpointKind.device, APNsDisposition.configuration), (410, .device, .tokenDead), (410, .broadcast, .drop),
        (429, .device, .backOffToken), (429, .broadcast, .backOffChannel), (429, .channelManagement, .retryWithBackoff),
        (503, .device, .retryOnNewConnection), (502, .broadcast, .retryWithBackoff), (500, .device, .retryWithBackoff),
        (408, .device, .retryWithBackoff), (400, .device, .drop), (404, .channelManagement, .drop),
    ])
    func unknownReasonsAreClassifiedByStatus(_ status: Int, _ endpoint: APNsEndpointKind, _ expected: APNsDisposition) {
        #expect(APNsError(rejection: errorResponse(status, "NeverSeenBefore"), endpoint: endpoint).disposition == expected)
    }

    @Test func a410KeepsItsMillisecondTimestampAndTheApnsID() {
        let response = HTTP2Response(status: 410, headers: [HTTP2Header("apns-id", "5f0c2a9e-3b1d-4c7e-9a11-0d2f6b8e4c21")],
                                     body: Array(#"{"reason":"Unregistered","timestamp":1767290400123}"#.utf8))
        let error = APNsError(rejection: response, endpoint: .device)
        #expect(error.reason == .unregistered)
        #expect(error.disposition == .tokenDead)
        #expect(error.timestampMilliseconds == 1_767_290_400_123)
        #expect(error.requestID == "5f0c2a9e-3b1d-4c7e-9a11-0d2f6b8e4c21")
        #expect(error.description == "APNs rejected the device push with 410 Unregistered [request 5f0c2a9e-3b1d-4c7e-9a11-0d2f6b8e4c21]"
            + " [invalid since 1767290400123 ms] -> device token is dead")
    }

    @Test func broadcastErrorsCarryTheRequestAndUniqueIDs() {
        let response = errorResponse(400, "ChannelNotRegistered", headers: [
            HTTP2Header("apns-request-id", "9b7c1e44-2f0a-4d55-8c3e-61a0b2f9d7aa"), HTTP2Header("apns-unique-id", "u-1"),
        ])
        let error = APNsError(rejection: response, endpoint: .broadcast)
        #expect(error.requestID == "9b7c1e44-2f0a-4d55-8c3e-61a0b2f9d7aa")
        #expect(error.uniqueID == "u-1")
        #expect(error.disposition == .channelGone)
    }

    @Test(arguments: ["", "<html>Bad Gateway</html>", #"{"timestamp":"soon"}"#, #"{"reason":42}"#])
    func bodiesWithoutAReasonGiveAnEmptyUnknownReason(_ body: String) {
        let error = APNsError(rejection: HTTP2Response(status: 502, body: Array(body.utf8)), endpoint: .device)
        #expect(error.reason == .unknown(""))
        #expect(error.disposition == .retryWithBackoff)
        #expect(error.description.contains("502 (no reason)"))
    }

    @Test func aFractionalTimestampStillParses() {
        let response = HTTP2Response(status: 410, body: Array(#"{"reason":"ExpiredToken","timestamp":1767290400123.0}"#.utf8))
        #expect(APNsError(rejection: response, endpoint: .device).timestampMilliseconds == 1_767_290_400_123)
    }

    // MARK: - Failures without a response

    @Test(arguments: [
        (HTTP2RequestError.transport(.closedByPeer), APNsDisposition.retryOnNewConnection),
        (.notConnected(.closedByPeer), .retryOnNewConnection),
        (.streamReset(errorCode: 2), .retryOnNewConnection),
        (.queueFull, .retryWithBackoff),
        (.shutdown, .retryWithBackoff),
        (.retriesExhausted(last: "connection refused"), .retryWithBackoff),
        (.goaway(errorCode: 0, reason: nil), .retryOnNewConnection),
        (.goaway(errorCode: 0, reason: "Shutdown"), .retryOnNewConnection),
        (.goaway(errorCode: 0, reason: "InvalidProviderToken"), .configuration),
        (.goaway(errorCode: 0, reason: "ExpiredProviderToken"), .refreshTokenAndRetry),
        (.goaway(errorCode: 0, reason: "BadDeviceToken"), .retryOnNewConnection),
        (.goaway(errorCode: 0, reason: "Unregistered"), .retryOnNewConnection),
        (.goaway(errorCode: 0, reason: "SomethingNew"), .retryOnNewConnection),
    ])
    func transportFailuresHaveDispositions(_ failure: HTTP2RequestError, _ expected: APNsDisposition) {
        let error = APNsError(transport: failure, endpoint: .device, sentID: "id-1")
        #expect(error.disposition == expected)
        #expect(error.status == nil)
        #expect(error.requestID == "id-1")
    }

    /// Only failures APNs provably did not process are "unprocessed": the personal queue does not
    /// count them as delivery attempts. A stream at or below a GOAWAY's last-stream-id, a reset,
    /// a timeout or a connection lost after sending may have been processed: those are
    /// "unanswered" (APNs may have delivered them), which a push-to-start must not repeat.
    @Test func onlyRequestsAPNsNeverProcessedAreUnprocessedAndTheOthersWithoutAnAnswerAreUnanswered() {
        let unprocessed: [HTTP2RequestError] = [.notConnected(.closedByPeer), .queueFull, .retriesExhausted(last: "REFUSED_STREAM")]
        let maybeProcessed: [HTTP2RequestError] = [.transport(.closedByPeer), .goaway(errorCode: 0, reason: "Shutdown"),
                                                   .streamReset(errorCode: 2), .timedOut(after: .seconds(30)), .shutdown]
        for failure in unprocessed {
            let error = APNsError(transport: failure, endpoint: .device, sentID: nil)
            #expect(error.isUnprocessed && !error.isUnanswered, "\(failure)")
        }
        for failure in maybeProcessed {
            let error = APNsError(transport: failure, endpoint: .device, sentID: nil)
            #expect(!error.isUnprocessed && error.isUnanswered, "\(failure)")
        }
        let answered = APNsError(rejection: errorResponse(500, "InternalServerError"), endpoint: .device)
        #expect(!answered.isUnprocessed && !answered.isUnanswered, "an answer is an answer")
        let refusedLocally = APNsError(endpoint: .device, failure: .invalidRequest(.badDeviceToken, detail: "not hex"), disposition: .drop)
        #expect(!refusedLocally.isUnanswered, "never sent")
    }

    @Test func aGoawayReasonIsReported() {
        let error = APNsError(transport: .goaway(errorCode: 0, reason: "Shutdown"), endpoint: .broadcast, sentID: nil)
        #expect(error.reason == .shutdown)
        #expect(error.description == "broadcast got no response: server sent GOAWAY (code 0): Shutdown -> retry on a new connection")
    }
}
