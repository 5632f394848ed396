import TouchlineActivity

/// One provider event for a channel, in either of the two ways a content-state can be updated:
/// a generic merge patch (`{"seq": 7, "patch": {...}}`), or a sports event folded by the rules
/// of the channel's sport (`{"seq": 7, "type": "goal", ...}`). An object with a `patch` member is
/// a patch; anything else is read as an event of `sport` (nil: the channel has no sport, and
/// only patches are events). `seq` is the caller's to validate.
public enum ContentEvent: Sendable, Equatable {
    case patch(ContentPatchEvent)
    case sports(SportEvent)

    public init(json: JSONValue, sport: Sport?) throws(EventValidationError) {
        if json[member: "patch"] != nil {
            self = .patch(try ContentPatchEvent(json: json))
        } else if let sport {
            self = .sports(try SportEvent(json: json, sport: sport))
        } else {
            throw EventValidationError(field: "patch", "missing field 'patch' (a channel without a sport takes merge patches only)")
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
        var fields = try EventFields(json, what: "event", envelope: SportEvent.envelope)
        let patch = try fields.required(fields.value("patch"), "patch")
        guard case .object = patch else { throw fields.error("patch", "must be a JSON object (an RFC 7396 merge patch)") }
        self.patch = patch
        importance = try fields.choice("importance", Importance.self) ?? .normal
        alert = try fields.value("alert").map { (value) throws(EventValidationError) in
            var alertFields = try EventFields(value, what: "alert", prefix: "alert.")
            let alert = LiveActivityAlert(title: try Self.text(&alertFields, "title"), body: try Self.text(&alertFields, "body"),
                                          sound: try alertFields.string("sound"))
            try alertFields.rejectUnknown()
            return alert
        }
        try fields.rejectUnknown()
    }

    /// An alert's title or body: text of 1 to 256 characters, or a localized text
    /// `{"loc-key": key, "loc-args": [...]}` whose key is one of the app catalogue's (``AlertKey``)
    /// with exactly its number of arguments, each 1 to 64 characters. A key the catalogue lacks
    /// would show as the key itself on the phone, and missing arguments as blanks: refused.
    private static func text(_ fields: inout EventFields, _ name: String) throws(EventValidationError) -> LiveActivityAlert.Text {
        guard let value = fields.value(name), case .object = value else {
            return .plain(try fields.required(fields.string(name, maxLength: 256), name))
        }
        var localized = try EventFields(value, what: "alert.\(name)", prefix: "alert.\(name).")
        let keyName = try localized.required(localized.string("loc-key", maxLength: 128), "loc-key")
        guard let key = AlertKey(rawValue: keyName) else {
            throw localized.error("loc-key", "must be a key of the app's string catalogue (AlertKey), got \"\(keyName)\"")
        }
        let arguments: [String]
        switch localized.value("loc-args") {
        case nil: arguments = []
        case .array(let values)?:
            arguments = try values.map { (value) throws(EventValidationError) -> String in
                guard case .string(let text) = value, (1...64).contains(text.count) else {
                    throw localized.error("loc-args", "must hold strings of 1 to 64 characters")
                }
                return text
            }
        default: throw localized.error("loc-args", "must be an array of strings")
        }
        guard arguments.count == key.argumentCount else {
            throw localized.error("loc-args", "must hold \(key.argumentCount) argument(s) for '\(keyName)', got \(arguments.count)")
        }
        try localized.rejectUnknown()
        return .localized(key: keyName, arguments: arguments)
    }
}
