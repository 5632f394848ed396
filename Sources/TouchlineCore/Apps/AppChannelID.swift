/// How a channel's app is kept in its id, so that every store, log, partition and limit keyed
/// by channel id serves several apps unchanged.
///
/// The channels of the app named ``defaultApp`` keep the provider's id (the data of a gateway
/// that served one app is that app's as it is); another app's channel is kept as
/// `<app>/<id>`. A provider's id never holds `/` (1 to 128 of `A-Z a-z 0-9 - _ . :`), so the
/// two cannot meet, and the API shows the parts apart (docs/configuration.md, "Several apps").
public enum AppChannelID {
    /// The app of the `apns` block, of development mode, and of every route without an app in
    /// its path.
    public static let defaultApp = "default"
    /// Longest app name: short enough for metric labels and paths.
    public static let maximumNameLength = 32

    /// Whether `name` can name an app: 1 to 32 of `a-z 0-9 -`, starting with a letter or digit
    /// (it appears in paths, metric labels and ids as it is).
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= maximumNameLength, first != UInt8(ascii: "-") else { return false }
        return name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") }
    }

    /// The id the gateway keeps for the provider's channel `id` of `app`.
    public static func qualified(_ id: String, app: String) -> String {
        app == defaultApp ? id : "\(app)/\(id)"
    }

    /// The app and the provider's id of a kept channel id.
    public static func split(_ qualified: String) -> (app: String, id: String) {
        guard let slash = qualified.firstIndex(of: "/") else { return (defaultApp, qualified) }
        return (String(qualified[..<slash]), String(qualified[qualified.index(after: slash)...]))
    }

    /// The app of a kept channel id.
    public static func app(of qualified: String) -> String { split(qualified).app }

    /// The `app` member of the API's JSON naming `app`: none for the `default` app, whose
    /// answers and events read as they did before apps.
    public static func member(naming app: String) -> [JSONValue.Member] {
        app == defaultApp ? [] : [.init("app", .string(app))]
    }
}
