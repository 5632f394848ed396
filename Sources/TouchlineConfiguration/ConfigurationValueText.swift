import APNs
import TouchlineCore
import TouchlineRuntime

/// Resolved setting values as `touchline serve --check-config` prints them: one line each,
/// compact, with nothing secret in them.
///
/// The JSON-object settings are shown member by member from the resolved value, so the defaults
/// a file left out show too. Any member called `secret` is redacted, and webhook URLs lose their
/// query, which receivers sometimes use for a token.
enum ConfigurationValueText {
    static let redacted = "<redacted>"

    /// `{connections: 2, maxInFlight: 1000, saveInterval: 100 ms, delivery: {...}}`
    static func fields(of value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .struct, !mirror.children.isEmpty, !(value is Duration), !(value is WebhookURL) else { return scalar(value) }
        let members = mirror.children.map { child in
            let name = child.label ?? "_"
            return "\(name): " + (name.lowercased().contains("secret") ? redacted : fields(of: child.value))
        }
        return "{" + members.joined(separator: ", ") + "}"
    }

    private static func scalar(_ value: Any) -> String {
        switch value {
        case let duration as Duration: return Self.duration(duration)
        case let url as WebhookURL: return Self.url(url)
        case let list as [Any]: return "[" + list.map(fields(of:)).joined(separator: ", ") + "]"
        default:
            let mirror = Mirror(reflecting: value)
            if mirror.displayStyle == .optional { return mirror.children.first.map { fields(of: $0.value) } ?? "none" }
            if mirror.displayStyle == .set { return "[" + mirror.children.map { fields(of: $0.value) }.sorted().joined(separator: ", ") + "]" }
            return String(describing: value)
        }
    }

    /// `10 s`, `100 ms`.
    static func duration(_ duration: Duration) -> String {
        let milliseconds = duration / .milliseconds(1)
        if milliseconds >= 1000, milliseconds.truncatingRemainder(dividingBy: 1000) == 0 { return "\(Int(milliseconds / 1000)) s" }
        if milliseconds == milliseconds.rounded() { return "\(Int(milliseconds)) ms" }
        return "\(milliseconds) ms"
    }

    /// `http://host:port/path`, the query left out.
    static func url(_ url: WebhookURL) -> String {
        let path = url.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        let host = url.host.contains(":") ? "[\(url.host)]" : url.host
        return "\(url.isTLS ? "https" : "http")://\(host):\(url.port)\(path)" + (url.target.contains("?") ? "?…" : "")
    }

    static func environment(_ environment: APNsEnvironment) -> String {
        switch environment {
        case .production: "production"
        case .sandbox: "sandbox"
        case .custom(let pushHost, let pushPort, let managementHost, let managementPort):
            "\(pushHost):\(pushPort),\(managementHost):\(managementPort)"
        }
    }

    /// The endpoints by name, URL and events (secrets redacted), then the delivery settings.
    static func webhooks(_ settings: WebhookSettings) -> String {
        let endpoints = settings.endpoints.map { endpoint in
            "{name: \(endpoint.name), url: \(url(endpoint.url)), secret: \(redacted), events: "
                + "[\(endpoint.events.map(\.rawValue).sorted().joined(separator: ", "))]}"
        }
        let others = Mirror(reflecting: settings).children.filter { $0.label != "endpoints" }.map { child in
            "\(child.label ?? "_"): " + (child.label?.lowercased().contains("secret") == true ? redacted : fields(of: child.value))
        }
        return "{" + (["endpoints: [\(endpoints.joined(separator: ", "))]"] + others).joined(separator: ", ") + "}"
    }
}
