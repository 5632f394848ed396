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
