import TouchlineCore
import TouchlineRuntime

/// Which follow topics a key's kickoffs may start (`POST /v1/channels/{id}/start`'s
/// `audience.follows`): a kickoff pushes an alert to every follower of its topic, so a provider
/// key reaches only its own audiences. An admin key may address any topic; a provider key the
/// `channel:` topics of its own channels (an id its prefix covers) and the topics its
/// configuration grants it (`apiKeys[].followTopics`: a topic as is, or a prefix ending in `*`).
package enum FollowTopicGrants {
    /// Grants a key may carry at most.
    static let maximumGrants = 64
    /// The topic form of a channel (`channel:<id>`), as apps follow a single match.
    static let channelTopicPrefix = "channel:"

    /// Whether `key` may address `topic`.
    static func allows(_ key: GatewayConfiguration.APIKey, _ topic: String) -> Bool {
        switch key.scope {
        case .admin:
            return true
        case .channelPrefix(let prefix):
            if topic.hasPrefix(channelTopicPrefix), topic.dropFirst(channelTopicPrefix.count).hasPrefix(prefix) { return true }
            return key.followTopics.contains { grant in
                grant.hasSuffix("*") ? topic.hasPrefix(grant.dropLast()) : topic == grant
            }
        }
    }

    /// 403 `follow_topic_not_allowed` unless `key` may address `topic`; the message names what it may.
    package static func require(_ key: GatewayConfiguration.APIKey, mayAddress topic: String) throws(HTTPError) {
        guard !allows(key, topic), case .channelPrefix(let prefix) = key.scope else { return }
        let granted = key.followTopics.isEmpty ? "" : " and \(key.followTopics.map { "'\($0)'" }.joined(separator: ", "))"
        throw HTTPError(status: 403, code: "follow_topic_not_allowed",
                        message: "this API key may not start the followers of '\(topic)': it may address '\(channelTopicPrefix)\(prefix)…'\(granted)")
    }

    /// `apiKeys[].followTopics`: an array of at most ``maximumGrants`` topics of 1 to 128 bytes
    /// without the characters no identifier may hold (``IdentifierCharacters``), `*` only as the
    /// last character.
    static func topics(json value: JSONValue) throws(InvalidConfigurationValue) -> [String] {
        guard case .array(let items) = value, items.count <= maximumGrants else {
            throw InvalidConfigurationValue("must be an array of at most \(maximumGrants) follow topics, like [\"team:ARS\", \"league:PL:*\"]")
        }
        var topics: [String] = []
        for item in items {
            guard case .string(let topic) = item, (1...128).contains(topic.utf8.count),
                  !topic.unicodeScalars.contains(where: IdentifierCharacters.isRefused),
                  !topic.dropLast().contains("*"), topic != "*" else {
                throw InvalidConfigurationValue("must hold follow topics of 1 to 128 bytes without control characters, a '*' only at the end "
                                                + "of a prefix (\"league:PL:*\"); a lone \"*\" is refused (an admin key addresses everything)")
            }
            topics.append(topic)
        }
        return topics
    }
}
