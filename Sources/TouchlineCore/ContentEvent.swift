/// One provider event for a channel, in either of the two ways a content-state can be updated:
/// a generic merge patch (`{"seq": 7, "patch": {...}}`), or a sports event folded by
/// `SportsReducer` (`{"seq": 7, "type": "goal", ...}`). An object with a `patch` member is a
/// patch; anything else is read as a sports event. `seq` is the caller's to validate.
public enum ContentEvent: Sendable, Equatable {
    case patch(ContentPatchEvent)
    case sports(SportsEvent)

    public init(json: JSONValue) throws(EventValidationError) {
        if json[member: "patch"] != nil {
            self = .patch(try ContentPatchEvent(json: json))
        } else {
            self = .sports(try SportsEvent(json: json))
        }
    }
}

/// A generic update: an RFC 7396 merge patch on the channel's content-state, with the
/// importance and the optional alert the provider chose:
/// `{"seq": 7, "patch": {"home": 2, "last": "Goal"}, "importance": "critical",
///   "alert": {"title": "Goal!", "body": "ARS 2-1 CHE", "sound": "default"}}`.
public struct ContentPatchEvent: Sendable, Equatable {
    /// An object; applied with `JSONValue.applyingMergePatch`.
    public var patch: JSONValue
    /// `normal` unless the event says otherwise.
    public var importance: Importance
    /// Sent only with a priority-10 push (critical, within budget).
    public var alert: LiveActivityAlert?

    public init(patch: JSONValue, importance: Importance = .normal, alert: LiveActivityAlert? = nil) {
        self.patch = patch
        self.importance = importance
        self.alert = alert
    }

    public init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "event", envelope: SportsEvent.envelope)
        let patch = try fields.required(fields.value("patch"), "patch")
        guard case .object = patch else { throw fields.error("patch", "must be a JSON object (an RFC 7396 merge patch)") }
        self.patch = patch
        importance = try fields.choice("importance", Importance.self) ?? .normal
        alert = try fields.value("alert").map { (value) throws(EventValidationError) in
            var alertFields = try EventFields(value, what: "alert", prefix: "alert.")
            let alert = LiveActivityAlert(
                title: .plain(try alertFields.required(alertFields.string("title", maxLength: 256), "title")),
                body: .plain(try alertFields.required(alertFields.string("body", maxLength: 256), "body")),
                sound: try alertFields.string("sound"))
            try alertFields.rejectUnknown()
            return alert
        }
        try fields.rejectUnknown()
    }
}
