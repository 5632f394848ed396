import TouchlineAccess
import TouchlineCore
import TouchlineRuntime

/// One audience of the match as a kickoff (`POST /v1/channels/{id}/start`) named it: a follow
/// topic, and the app's attributes and alert for its Live Activity. A rollover
/// (``ActivityRollover``) starts every audience the channel was kicked off to again on the
/// successor channel with the current state, so the channel keeps them with its settings: the
/// latest kickoff per topic (a match is often kicked off once per team), at most
/// ``maximumAudiences`` topics.
package struct KickoffTemplate: Sendable, Equatable {
    /// Topics a channel keeps; a kickoff to another one replaces the oldest.
    package static let maximumAudiences = 16

    /// `audiences` with `kickoff` in place of the one for its topic, or added (the oldest topic
    /// dropped beyond the bound).
    package static func remembering(_ kickoff: KickoffTemplate, in audiences: [KickoffTemplate]) -> [KickoffTemplate] {
        var kept = audiences.filter { $0.follows != kickoff.follows }
        kept.append(kickoff)
        return Array(kept.suffix(maximumAudiences))
    }

    /// `audience.follows` of the kickoff.
    package var follows: String
    var attributesType: String
    var attributes: JSONValue
    /// The kickoff's `alert` object as it was given (validated then).
    var alert: JSONValue
    package var priority: Int

    /// As the settings keep it.
    package var json: JSONValue {
        ["follows": .string(follows), "attributesType": .string(attributesType), "attributes": attributes, "alert": alert,
         "priority": .integer(Int64(priority))]
    }

    init(follows: String, attributesType: String, attributes: JSONValue, alert: JSONValue, priority: Int) {
        (self.follows, self.attributesType, self.attributes, self.alert, self.priority) = (follows, attributesType, attributes, alert, priority)
    }

    /// The template of a kickoff's start payload (as the kickoff route encoded it): nil when the
    /// payload is not a start with attributes and an alert.
    package init?(payload: [UInt8], follows: String, priority: Int) {
        guard let aps = (try? JSONParser.parse(payload))?[member: "aps"], case .string(let type)? = aps[member: "attributes-type"],
              let attributes = aps[member: "attributes"], let alert = aps[member: "alert"] else { return nil }
        self.init(follows: follows, attributesType: type, attributes: attributes, alert: alert, priority: priority)
    }

    /// Reads the settings' copy, checked as the kickoff route checks it.
    package init(json: JSONValue) throws(HTTPError) {
        let body = try RequestBody(json, allowed: ["follows", "attributesType", "attributes", "alert", "priority"], prefix: "kickoff.")
        follows = try body.required(body.string("follows"), "follows")
        attributesType = try body.required(body.string("attributesType"), "attributesType")
        attributes = try body.required(body.object("attributes"), "attributes")
        alert = try body.required(body.object("alert"), "alert")
        _ = try PersonalJobIntake.alert(in: body, requiredFor: "a kickoff's start")
        priority = Int(try body.required(body.integer("priority"), "priority"))
    }

    /// The start of the audience on `apnsChannelID` with `contentState`, timestamped `now`.
    package func startPayload(contentState: JSONValue, into apnsChannelID: String, now: UnixTime) throws(HTTPError) -> [UInt8] {
        let body = try RequestBody(json, allowed: ["follows", "attributesType", "attributes", "alert", "priority"], prefix: "kickoff.")
        return LiveActivityPayload(timestamp: now, event: .start, contentState: contentState,
                                   alert: try PersonalJobIntake.alert(in: body, requiredFor: "a kickoff's start"),
                                   attributesType: attributesType, attributes: attributes, inputPushChannel: apnsChannelID).encoded()
    }
}
