import TouchlineCore

/// A kickoff (`POST /v1/channels/{id}/start`): push-to-start to every token following a topic,
/// subscribed to the match channel, with the payload bytes the gateway builds from it (the same
/// ``LiveActivityPayload`` encoding; only the timestamp's digits differ), for h2load to send.
struct KickoffRequest {
    let path: String
    let body: [UInt8]
    let payload: [UInt8]

    init(channelID: String, apnsChannelID: String, follow: String) {
        let contentState = JSONValue.object([.init("home", .integer(0)), .init("away", .integer(0)), .init("clock", .integer(0)),
                                             .init("period", .string("1H"))])
        let attributes = JSONValue.object([.init("matchId", .string(channelID)), .init("home", .string("ARS")), .init("away", .string("CHE"))])
        let alert = (title: "Kick-off", body: "Arsenal v Chelsea has started")
        path = "/v1/channels/\(channelID)/start"
        body = JSONValue.object([
            .init("audience", .object([.init("follows", .string(follow))])), .init("contentState", contentState),
            .init("attributesType", .string("MatchAttributes")), .init("attributes", attributes),
            .init("alert", .object([.init("title", .string(alert.title)), .init("body", .string(alert.body))])),
        ]).encoded
        payload = LiveActivityPayload(timestamp: SystemClock().now(), event: .start, contentState: contentState,
                                      alert: LiveActivityAlert(title: .plain(alert.title), body: .plain(alert.body)),
                                      attributesType: "MatchAttributes", attributes: attributes, inputPushChannel: apnsChannelID).encoded()
    }

    func post(api: HTTPLoadClient) throws -> PersonalJobPoller.Posted {
        try PersonalJobPoller.post(body, to: path, api: api)
    }
}
