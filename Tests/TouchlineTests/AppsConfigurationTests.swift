import APNsMock
import Foundation
import Testing
import Touchline
import TouchlineCore

/// `apps` in the configuration file: several apps beside the `apns` block's (`default`), each
/// checked as that block is, and the problems that name two sides.
@Suite struct AppsConfigurationTests {
    static let otherKeyID = "KEYB000002"
    static let otherTeamID = "TEAMB00002"

    /// A configuration file with the `apns` block of ``ConfigurationFiles`` and `apps` (JSON
    /// text of the array) and `apiKeys` (JSON text; an admin key by default).
    static func file(_ files: ConfigurationFiles, apps: String,
                     apiKeys: String = #"[{"key": "admin-key-0123456789abcdef", "admin": true}]"#) throws -> String {
        try files.write("apps.json", """
            {"apns": {"keyPath": "\(files.keyFile)", "keyID": "\(ConfigurationFiles.keyID)", "teamID": "\(ConfigurationFiles.teamID)",
                      "bundleID": "\(ConfigurationFiles.bundleID)"},
             "apps": \(apps), "apiKeys": \(apiKeys)}
            """)
    }

    static func app(_ name: String, bundleID: String, keyID: String = otherKeyID, teamID: String = otherTeamID,
                    keyPath: String = "AuthKey_KEYB000002.p8", environment: String = "production") -> String {
        #"{"name": "\#(name)", "bundleID": "\#(bundleID)", "keyID": "\#(keyID)", "teamID": "\#(teamID)", "keyPath": "\#(keyPath)", "environment": "\#(environment)"}"#
    }

    @Test func appsLoadBesideTheApnsBlockWithTheirOwnTeamKeyAndPolicyAndScopedKeys() throws {
        let files = try ConfigurationFiles()
        _ = try MockAPNsProviderKeyFiles.generate(keyID: Self.otherKeyID, in: files.directory)
        let path = try files.write("apps.json", """
            {"apns": {"keyPath": "\(files.keyFile)", "keyID": "\(ConfigurationFiles.keyID)", "teamID": "\(ConfigurationFiles.teamID)",
                      "bundleID": "\(ConfigurationFiles.bundleID)"},
             "apps": [\(Self.app("broadcaster", bundleID: "com.example.tv")),
                      {"name": "broadcaster-beta", "bundleID": "com.example.tv", "keyID": "\(Self.otherKeyID)", "teamID": "\(Self.otherTeamID)",
                       "keyPath": "AuthKey_KEYB000002.p8", "environment": "sandbox", "defaultPolicy": {"minimumIntervalSeconds": 2},
                       "personalQueue": {"connections": 4, "maxInFlight": 50}}],
             "apiKeys": [{"key": "admin-key-0123456789abcdef", "admin": true},
                         {"key": "tv-key-0123456789abcdef", "channelPrefix": "match-", "app": "broadcaster"}]}
            """)
        let configuration = try GatewayConfiguration.load(arguments: ["--config", path], environment: [:])
        #expect(configuration.credentialedApps.map(\.name) == ["default", "broadcaster", "broadcaster-beta"])
        let beta = try #require(configuration.apps.last)
        #expect(beta.apns.teamID == Self.otherTeamID && beta.apns.environment == .sandbox && beta.apns.keyPath == files.directory + "/AuthKey_KEYB000002.p8")
        #expect(beta.defaultPolicy?.minimumInterval == .seconds(2))
        // Its personal queue's bounds over the gateway's; what it leaves out is the gateway's.
        let queue = beta.personalQueue.applied(to: PersonalQueueSettings(window: 777))
        #expect(queue.connections == 4 && queue.maxInFlight == 50 && queue.window == 777)
        #expect(configuration.apps.first?.defaultPolicy == nil, "an app without a policy takes the gateway's")
        #expect(configuration.apiKeys.last?.app == "broadcaster" && configuration.apiKeys.first?.app == "default")
        // --check-config shows each app, its key redacted as every secret is.
        let report = try GatewayConfiguration.resolve(arguments: ["--config", path], environment: [:]).report.description
        #expect(report.contains("broadcaster: bundle com.example.tv, team \(Self.otherTeamID), key \(Self.otherKeyID)"), "\(report)")
        #expect(report.contains("app broadcaster, channels match-*") && !report.contains("tv-key-0123456789abcdef"))
    }

    @Test func theExampleInTheDocumentationLoads() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/configuration.md")
        let section = try #require(try String(contentsOf: docs, encoding: .utf8).components(separatedBy: "\n### Several apps\n").dropFirst().first)
        let example = try #require(section.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        let files = try ConfigurationFiles()  // the AuthKey_ABCDE12345.p8 of the example, and the tv app's key beside it
        _ = try MockAPNsProviderKeyFiles.generate(keyID: "TVKEY00002", in: files.directory)
        let configuration = try GatewayConfiguration.load(arguments: ["--config", try files.write("apps.json", example)], environment: [:])
        #expect(configuration.credentialedApps.map(\.name) == ["default", "tv", "sports-beta"])
        #expect(configuration.apps.last?.apns.environment == .sandbox && configuration.apps.last?.apns.keyPath == files.keyFile)
        #expect(configuration.apiKeys.last?.app == "tv")
    }

    @Test func eachProblemOfAnAppNamesItAndWhereItWasSet() throws {
        let files = try ConfigurationFiles()
        _ = try MockAPNsProviderKeyFiles.generate(keyID: Self.otherKeyID, in: files.directory)
        let path = try Self.file(files, apps: """
            [\(Self.app("default", bundleID: "com.example.one")),
             \(Self.app("Bad Name", bundleID: "com.example.two")),
             \(Self.app("league", bundleID: ConfigurationFiles.bundleID, keyID: ConfigurationFiles.keyID, teamID: Self.otherTeamID,
                        keyPath: files.keyFile)),
             \(Self.app("league", bundleID: "com.example.three", keyPath: "missing.p8"))]
            """, apiKeys: #"[{"key": "admin-key-0123456789abcdef", "admin": true}, {"key": "stray-key-0123456789abcdef", "channelPrefix": "m-", "app": "nowhere"}]"#)
        let found = problems(["--config", path]).map(\.description)
        func expectOne(_ parts: String..., sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(found.contains { line in parts.allSatisfy(line.contains) }, "\(parts) in \(found)", sourceLocation: sourceLocation)
        }
        expectOne("two apps are named 'default' (the apns block is the app 'default')", "apps[0].name in \(path)")
        expectOne(#"app name "Bad Name" must be 1 to 32 of a-z, 0-9 and '-'"#, "apps[1].name")
        expectOne("app 'league' has the bundle id \(ConfigurationFiles.bundleID) and environment of app 'default'", "apps[2].bundleID")
        expectOne("app 'league' names key \(ConfigurationFiles.keyID) with team \(Self.otherTeamID), but app 'default' names it with team "
                  + ConfigurationFiles.teamID, "a key belongs to one team", "apps[2].teamID")
        expectOne("two apps are named 'league'", "apps[3].name")
        expectOne("app 'league': cannot read APNs key file", "missing.p8", "apps[3].keyPath")
        #expect(found.count == 7, "one line each, and the unknown app of the stray key: \(found)")
        // An entry that is not an app is reported as the file is read, before any of this.
        let half = try Self.file(files, apps: #"[{"name": "half", "bundleID": "com.example.four"}]"#)
        #expect(problems(["--config", half]).map(\.description)
            == ["apps[0] needs keyPath, keyID, teamID (an app has a name and the APNs credentials of the apns block) (apps[0] in \(half))"])
    }

    @Test func anAppsPersonalQueueSetsOnlyItsOwnBounds() throws {
        let files = try ConfigurationFiles()
        _ = try MockAPNsProviderKeyFiles.generate(keyID: Self.otherKeyID, in: files.directory)
        let app = Self.app("tv", bundleID: "com.example.tv").replacingOccurrences(of: #""environment": "production"}"#,
                                                                                   with: #""environment": "production", "personalQueue": {"niceness": 5}}"#)
        let found = problems(["--config", try Self.file(files, apps: "[\(app)]")]).map(\.description)
        #expect(found.count == 1 && found[0].contains("apps[0].personalQueue has unknown key 'niceness'"), "\(found)")
    }

    @Test func aKeyScopedToAnUnknownAppAndAnAdminKeyWithAnAppAreRefused() throws {
        let files = try ConfigurationFiles()
        _ = try MockAPNsProviderKeyFiles.generate(keyID: Self.otherKeyID, in: files.directory)
        let unknown = try Self.file(files, apps: "[\(Self.app("tv", bundleID: "com.example.tv"))]", apiKeys: """
            [{"key": "admin-key-0123456789abcdef", "admin": true}, {"key": "radio-key-0123456789abcdef", "channelPrefix": "m-", "app": "radio"}]
            """)
        let found = problems(["--config", unknown]).map(\.description)
        #expect(found == [#"API key for prefix "m-" of app 'radio' is scoped to app 'radio', which is not configured (apps: default, tv) (apiKeys[1] in \#(unknown))"#],
                "\(found)")
        let admin = try Self.file(files, apps: "[\(Self.app("tv", bundleID: "com.example.tv"))]", apiKeys: """
            [{"key": "admin-key-0123456789abcdef", "admin": true, "app": "tv"}]
            """)
        #expect(problems(["--config", admin]).map(\.description).first?.contains(#"apiKeys[0] has both "admin": true and an app; an admin key serves every app"#) == true)
    }

    @Test func appsNeedAppleCredentials() throws {
        let files = try ConfigurationFiles()
        _ = try MockAPNsProviderKeyFiles.generate(keyID: Self.otherKeyID, in: files.directory)
        let path = try files.write("dev-apps.json", """
            {"apns": {"mode": "mock"}, "apps": [\(Self.app("tv", bundleID: "com.example.tv"))]}
            """)
        #expect(problems(["--config", path]).map(\.description).contains { $0.hasPrefix("apps are set but development mode sends to the bundled mock APNs") })
        // A cluster serves apps as a gateway of its own does.
        let cluster = try Self.file(files, apps: "[\(Self.app("tv", bundleID: "com.example.tv"))]")
        let loaded = try GatewayConfiguration.load(arguments: ["--config", cluster, "--store", #"{"backend": "jetstream", "servers": ["nats://127.0.0.1:4222"]}"#],
                                                   environment: [:])
        #expect(loaded.apps.map(\.name) == ["tv"] && loaded.store.jetStream != nil)
    }
}
