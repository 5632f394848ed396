import TouchlineActivity

/// How the alerts the gateway composes are written: as finished English text, or as
/// localization keys with arguments that each phone resolves in its own language.
///
/// One broadcast reaches every subscriber of a match, whatever their language, so `localized`
/// is what an international app wants; `text` suits an app in one language and needs no string
/// catalogue in the app. Chosen per channel (`alerts.mode` when it is created) or by the
/// gateway's default (the configuration's `alerts.mode`, `text` unless set).
public enum AlertMode: String, Sendable, CaseIterable {
    case text
    case localized
}

extension AlertMode {
    /// Reads `{"mode": "text" | "localized"}`: a channel's `alerts` as the API takes it and the
    /// store keeps it.
    public init(json: JSONValue) throws(EventValidationError) {
        var fields = try EventFields(json, what: "alerts")
        self = try fields.required(fields.choice("mode", AlertMode.self), "mode")
        try fields.rejectUnknown()
    }
}

extension AlertMode {
    /// An alert in this mode: `titleText` and `text` as they are, or the keys `title` (no
    /// arguments) and `body` with `arguments`, which each phone resolves in its own language.
    func alert(_ title: AlertKey, _ titleText: String, body: AlertKey, _ arguments: [String], text: String) -> LiveActivityAlert {
        switch self {
        case .text: LiveActivityAlert(title: .plain(titleText), body: .plain(text))
        case .localized: LiveActivityAlert(title: .localized(key: title.rawValue, arguments: []),
                                           body: .localized(key: body.rawValue, arguments: arguments))
        }
    }
}
