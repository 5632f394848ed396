import Foundation
import Testing
import TouchlineActivity
import TouchlineCore

/// The app's string catalogue (`Localizable.xcstrings`) held against the keys the gateway emits:
/// every key in every language with its exact arguments, and every alert the reducer composes in
/// `localized` mode resolvable on a phone in each language.
@Suite struct AlertCatalogueTests {
    static let languages = ["en", "fi", "uk", "zh-Hans"]
    static let cataloguePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/TouchlineActivity/Localizable.xcstrings").path

    /// The catalogue's translated strings: key → language → format.
    static func catalogue() throws -> [String: [String: String]] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cataloguePath))) as? [String: Any])
        #expect(root["sourceLanguage"] as? String == "en")
        let strings = try #require(root["strings"] as? [String: [String: Any]])
        return try strings.mapValues { entry in
            let localizations = try #require(entry["localizations"] as? [String: [String: Any]])
            return try localizations.mapValues { localization in
                let unit = try #require(localization["stringUnit"] as? [String: String])
                #expect(unit["state"] == "translated")
                return try #require(unit["value"])
            }
        }
    }

    /// The argument positions a format uses (`%1$@` is 1; a bare `%@` takes the next), or nil
    /// when it holds a specifier other than an object (`%d` would crash with string arguments).
    static func argumentPositions(_ format: String) -> [Int]? {
        var positions: [Int] = []
        var next = 1
        var scanner = format.unicodeScalars.makeIterator()
        while let scalar = scanner.next() {
            guard scalar == "%" else { continue }
            var digits = ""
            var specifier = scanner.next()
            while let current = specifier, ("0"..."9").contains(current) {
                digits.unicodeScalars.append(current)
                specifier = scanner.next()
            }
            if specifier == "%" && digits.isEmpty { continue }
            if !digits.isEmpty {
                guard specifier == "$", let position = Int(digits) else { return nil }
                specifier = scanner.next()
                positions.append(position)
            } else {
                positions.append(next)
                next += 1
            }
            guard specifier == "@" else { return nil }
        }
        return positions
    }

    /// `format` with its arguments put in, as the phone shows it.
    static func render(_ format: String, _ arguments: [String]) -> String {
        var text = format
        for (index, argument) in arguments.enumerated().reversed() {
            text = text.replacingOccurrences(of: "%\(index + 1)$@", with: argument)
        }
        return text
    }

    @Test func everyKeyIsInEveryLanguageWithExactlyItsArguments() throws {
        let catalogue = try Self.catalogue()
        for key in AlertKey.allCases {
            let formats = try #require(catalogue[key.rawValue], "\(key.rawValue) is missing from the catalogue")
            for language in Self.languages {
                let format = try #require(formats[language], "\(key.rawValue) has no \(language) string")
                let positions = try #require(Self.argumentPositions(format), "\(key.rawValue) [\(language)]: \(format)")
                #expect(Set(positions) == Set((0..<key.argumentCount).map { $0 + 1 }),
                        "\(key.rawValue) [\(language)] '\(format)' must use arguments 1...\(key.argumentCount)")
            }
        }
    }

    @Test func theCatalogueHoldsOnlyKeysTheGatewayKnows() throws {
        let unknown = Set(try Self.catalogue().keys).subtracting(AlertKey.allCases.map(\.rawValue))
        #expect(unknown.isEmpty, "stale keys: \(unknown.sorted())")
    }

    /// The format check itself: a wrong count or a non-object specifier is caught.
    @Test func theArgumentCheckCatchesWhatWouldBreakOnAPhone() {
        #expect(Self.argumentPositions("%1$@ %2$@-%3$@") == [1, 2, 3])
        #expect(Self.argumentPositions("%@ v %@") == [1, 2])
        #expect(Self.argumentPositions("100%% %1$@") == [1])
        #expect(Self.argumentPositions("%d goals") == nil)
        #expect(Self.argumentPositions("%1$d") == nil)
    }

    /// Every alerting moment of a match of each sport, in localized mode, with each combination
    /// of what is known (scorer, minute): every key the rules can emit, and only catalogue keys.
    @Test func everyAlertTheRulesComposeResolvesInEveryLanguage() throws {
        let catalogue = try Self.catalogue()
        var emitted: Set<String> = []
        var english: [Sport: [String]] = [:]
        for (sport, events) in Self.alertingMatches {
            let attributes = MatchAttributes(sport: sport, homeName: "Arsenal", homeCode: "ARS", awayName: "Chelsea", awayCode: "CHE",
                                             competition: "Premier League", kickoff: 1_767_290_400)
            let sports = SportsChannel(attributes: attributes, alertMode: .localized)
            var state = sports.initialState
            for json in events {
                let result = try sports.apply(try sports.event(json: JSONParser.parse(Array(json.utf8))), to: state,
                                              now: UnixTime(seconds: 1_767_290_400))
                state = result.state
                guard let alert = result.alert else { continue }
                var lines: [String] = []
                for text in [alert.title, alert.body] {
                    guard case .localized(let name, let arguments) = text else {
                        Issue.record("\(json): \(text) is not localized")
                        continue
                    }
                    let key = try #require(AlertKey(rawValue: name), "\(name) is not an alert key")
                    #expect(arguments.count == key.argumentCount, "\(name) got \(arguments)")
                    emitted.insert(name)
                    for language in Self.languages {
                        let shown = Self.render(try #require(catalogue[name]?[language]), arguments)
                        #expect(!shown.contains("%") && !shown.isEmpty, "\(name) [\(language)] shows '\(shown)'")
                        if language == "en" { lines.append(shown) }
                    }
                }
                english[sport, default: []].append(lines.joined(separator: " / "))
            }
        }
        #expect(emitted == Set(AlertKey.allCases.map(\.rawValue)), "never emitted: \(Set(AlertKey.allCases.map(\.rawValue)).subtracting(emitted))")
        #expect(english[.football] == ["Kick-off / ARS v CHE", "Goal! / ARS 1-0 CHE · Saka 12'", "Goal! / ARS 1-1 CHE · Palmer", "Goal! / ARS 1-2 CHE",
                                       "Goal! (penalty) / ARS 2-2 CHE · Saka 33'", "Penalty missed / 40' Palmer (CHE)", "Red card / 55' (CHE)",
                                       "Second yellow card / Rice (ARS)", "Red card / CHE", "Goal disallowed / ARS 1-2 CHE", "Full time / ARS 1-2 CHE"])
        #expect(english[.basketball] == ["Tip-off / ARS v CHE", "Final / ARS 3-2 CHE"])
        #expect(english[.tennis] == ["Set / ARS wins set 1, 6-0", "Match point / Match point for ARS", "Game, set and match / ARS wins 6-0 6-0"])
    }

    /// Events of each sport that reach every alert of its rules.
    static let alertingMatches: [(Sport, [String])] = [
        (.football, [
            #"{"type": "status", "status": "live"}"#,
            #"{"type": "goal", "team": "home", "player": "Saka", "minute": 12}"#,
            #"{"type": "goal", "team": "away", "player": "Palmer"}"#,
            #"{"type": "goal", "team": "away", "minute": 30}"#,
            #"{"type": "penalty", "team": "home", "outcome": "scored", "player": "Saka", "minute": 33}"#,
            #"{"type": "penalty", "team": "away", "outcome": "missed", "player": "Palmer", "minute": 40}"#,
            #"{"type": "card", "team": "away", "card": "red", "minute": 55}"#,
            #"{"type": "card", "team": "home", "card": "second-yellow", "player": "Rice"}"#,
            #"{"type": "card", "team": "away", "card": "red"}"#,
            #"{"type": "var", "team": "home", "decision": "goal-disallowed", "minute": 70}"#,
            #"{"type": "status", "status": "finished"}"#,
        ]),
        (.basketball, [
            #"{"type": "status", "status": "live"}"#,
            #"{"type": "points", "team": "home", "points": 3}"#,
            #"{"type": "points", "team": "away", "points": 2}"#,
            #"{"type": "status", "status": "finished"}"#,
        ]),
        (.tennis, [#"{"type": "status", "status": "live"}"#, #"{"type": "server", "team": "home"}"#]
            + Array(repeating: #"{"type": "point", "team": "home"}"#, count: 4 * 12)),
    ]
}
