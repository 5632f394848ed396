import APNs
import TouchlineCore

extension GatewayConfiguration {
    /// Every app the gateway serves with Apple credentials: the `apns` block as `default`, then
    /// ``apps``. Empty in development mode (the bundled mock serves `default` alone).
    public var credentialedApps: [App] {
        (apns.map { [App(name: AppChannelID.defaultApp, apns: $0)] } ?? []) + apps
    }

    /// The problems of ``apps``, each naming the app and where it was set: names (URL-safe,
    /// unique, `default` taken by the `apns` block), each app's APNs settings as the `apns`
    /// block's are checked, two apps with one bundle id in one environment (APNs could not tell
    /// their pushes apart), and one key named with two teams (a key belongs to one team; it may
    /// serve several apps of it). Apps need Apple credentials.
    func appProblems(origins: ConfigurationOrigins, readFile: (String) throws -> [UInt8]) -> [GatewayConfigurationError.Problem] {
        guard !apps.isEmpty else { return [] }
        var problems: [GatewayConfigurationError.Problem] = []
        if apnsMode == .mock {
            problems.append(.init("apps are set but development mode sends to the bundled mock APNs, which serves the one app 'default': "
                                  + "give each app Apple credentials and leave development mode", source: origins.app(0)))
        }
        let everyApp = credentialedApps
        let offset = everyApp.count - apps.count
        func source(_ index: Int, _ member: String?) -> ConfigurationSource? {
            guard index >= offset else { return member.flatMap { APNsSettings.Member(rawValue: $0) }.flatMap { origins[$0.setting] } }
            guard case .file(let path, let key)? = origins.app(index - offset) else { return nil }
            return .file(path: path, key: member.map { "\(key).\($0)" } ?? key)
        }
        func label(_ app: App) -> String { "app '\(app.name)'" }
        for (index, app) in everyApp.enumerated() where index >= offset {
            if !AppChannelID.isValidName(app.name) {
                problems.append(.init("app name \"\(app.name)\" must be 1 to \(AppChannelID.maximumNameLength) of a-z, 0-9 and '-', "
                                      + "not starting with '-' (it appears in paths and metrics)", source: source(index, "name")))
            }
            app.apns.check(report: { message, member in problems.append(.init("\(label(app)): \(message)", source: source(index, member.rawValue))) },
                           readFile: readFile)
        }
        for (index, app) in everyApp.enumerated() {
            for (otherIndex, other) in everyApp.enumerated() where otherIndex > index {
                if app.name == other.name {
                    let why = app.name == AppChannelID.defaultApp && index < offset ? " (the apns block is the app 'default')" : ""
                    problems.append(.init("two apps are named '\(app.name)'\(why): names must be unique", source: source(otherIndex, "name")))
                }
                if app.apns.bundleID == other.apns.bundleID, app.apns.environment == other.apns.environment {
                    problems.append(.init("\(label(other)) has the bundle id \(other.apns.bundleID) and environment of \(label(app)): "
                                          + "one app serves each bundle id in each environment", source: source(otherIndex, "bundleID")))
                }
                if app.apns.keyID == other.apns.keyID, app.apns.teamID != other.apns.teamID {
                    problems.append(.init("\(label(other)) names key \(other.apns.keyID) with team \(other.apns.teamID), but \(label(app)) "
                                          + "names it with team \(app.apns.teamID): a key belongs to one team", source: source(otherIndex, "teamID")))
                }
            }
        }
        return problems
    }
}
