import Foundation
import Testing
import TouchlineActivity
import TouchlineCore

/// The app's types (`TouchlineActivity`) against what the gateway really sends: the reducers'
/// output of each sport and every tagged JSON example of docs/content-state.md, decoded with a
/// default `JSONDecoder` as the system decodes them, and written back to the same JSON (so no
/// member is dropped or misnamed).
@Suite struct ActivityTypesTests {
    static let documentPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/content-state.md").path

    /// Decodes `bytes` as `T`, encodes it again, and expects the same JSON object.
    static func roundTrip<T: Codable>(_ type: T.Type, _ bytes: [UInt8], _ what: String) throws -> T {
        let decoded = try JSONDecoder().decode(T.self, from: Data(bytes))
        let original = try JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary
        let written = try JSONSerialization.jsonObject(with: JSONEncoder().encode(decoded)) as? NSDictionary
        #expect(original != nil && original == written, "\(what): \(String(decoding: bytes, as: UTF8.self))")
        return decoded
    }

    /// The ```json <kind> blocks of the page, by kind.
    static func taggedExamples() throws -> [(kind: String, json: String)] {
        let page = try String(contentsOfFile: documentPath, encoding: .utf8)
        var examples: [(String, String)] = []
        var current: (kind: String, lines: [String])?
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if let block = current {
                if line == "```" {
                    examples.append((block.kind, block.lines.joined(separator: "\n")))
                    current = nil
                } else {
                    current?.lines.append(String(line))
                }
            } else if line.hasPrefix("```json "), let kind = line.split(separator: " ").last {
                current = (String(kind), [])
            }
        }
        return examples
    }

    @Test func everyTaggedExampleOfTheDocsDecodes() throws {
        let examples = try Self.taggedExamples()
        let kinds = ["football-attributes", "football-state", "basketball-attributes", "basketball-state", "tennis-attributes", "tennis-state"]
        #expect(Set(examples.map(\.kind)) == Set(kinds), "\(examples.map(\.kind))")
        for (kind, json) in examples {
            let bytes = Array(json.utf8)
            switch kind {
            case "football-attributes": #expect(try Self.roundTrip(FootballActivityAttributes.self, bytes, kind).match.homeCode == "ARS")
            case "basketball-attributes": #expect(try Self.roundTrip(BasketballActivityAttributes.self, bytes, kind).match.sport == "basketball")
            case "tennis-attributes": #expect(try Self.roundTrip(TennisActivityAttributes.self, bytes, kind).match.bestOf == 3)
            case "football-state":
                let state = try Self.roundTrip(FootballActivityAttributes.ContentState.self, bytes, kind)
                #expect(state.lastIncident?.kind == .goal && state.clockStart == Date(timeIntervalSince1970: 1_767_290_580))
            case "basketball-state":
                let state = try Self.roundTrip(BasketballActivityAttributes.ContentState.self, bytes, kind)
                #expect(state.lastPlay?.points == 3 && state.clockEnd == Date(timeIntervalSince1970: 1_767_291_000))
            case "tennis-state":
                let state = try Self.roundTrip(TennisActivityAttributes.ContentState.self, bytes, kind)
                #expect(state.sets.count == 2 && state.points.home == "40" && state.matchPoint == .home)
            default: Issue.record("an example of unknown kind \(kind)")
            }
            // The gateway reads the same examples as valid states and attributes of their sport.
            let value = try JSONParser.parse(bytes)
            if kind.hasSuffix("-attributes") {
                #expect(throws: Never.self) { try MatchAttributes(json: value) }
            } else {
                let sport = try #require(Sport(rawValue: String(kind.prefix { $0 != "-" })))
                let attributes = MatchAttributes(sport: sport, homeName: "A", homeCode: "A", awayName: "B", awayCode: "B", competition: "C", kickoff: 0)
                #expect(throws: Never.self) { try SportsChannel(attributes: attributes).validated(state: value) }
            }
        }
    }

    /// Every state a sample match of each sport goes through, as the gateway would push it.
    @Test func theReducersRealOutputDecodes() throws {
        for (sport, events) in AlertCatalogueTests.alertingMatches {
            let attributes = MatchAttributes(sport: sport, homeName: "Arsenal", homeCode: "ARS", awayName: "Chelsea", awayCode: "CHE",
                                             competition: "Premier League", kickoff: 1_767_290_400)
            let sports = SportsChannel(attributes: attributes)
            var states = [sports.initialState]
            for (index, json) in ((Self.extraEvents[sport] ?? []) + events).enumerated() {
                let event = try sports.event(json: JSONParser.parse(Array(json.utf8)))
                states.append(try sports.apply(event, to: states.last!, now: UnixTime(seconds: 1_767_290_400 + Int64(index) * 30)).state)
            }
            for state in states {
                let bytes = state.encoded
                switch sport {
                case .football: _ = try Self.roundTrip(FootballActivityAttributes.ContentState.self, bytes, "football")
                case .basketball: _ = try Self.roundTrip(BasketballActivityAttributes.ContentState.self, bytes, "basketball")
                case .tennis: _ = try Self.roundTrip(TennisActivityAttributes.ContentState.self, bytes, "tennis")
                }
            }
            let attributesBytes = attributes.json.encoded
            switch sport {
            case .football: _ = try Self.roundTrip(FootballActivityAttributes.self, attributesBytes, "football attributes")
            case .basketball: _ = try Self.roundTrip(BasketballActivityAttributes.self, attributesBytes, "basketball attributes")
            case .tennis: #expect(try Self.roundTrip(TennisActivityAttributes.self, attributesBytes, "tennis attributes").match.bestOf == 3)
            }
        }
    }

    /// Events that reach the members the alerting matches leave out (clocks, stats, plays).
    static let extraEvents: [Sport: [String]] = [
        .football: [#"{"type": "period", "period": "1H", "clockSeconds": 0, "clockRunning": true}"#,
                    #"{"type": "stats", "homePossession": 55, "homeShots": 3, "awayCorners": 2}"#,
                    #"{"type": "substitution", "team": "home", "playerIn": "Havertz", "playerOut": "Saka", "minute": 60}"#],
        .basketball: [#"{"type": "period", "period": "Q1", "clockSeconds": 720, "clockRunning": true}"#, #"{"type": "foul", "team": "away"}"#,
                      #"{"type": "timeout", "team": "home"}"#],
    ]

    @Test func attributesWrittenBeforeTheSportMemberStillDecode() throws {
        let old = #"{"homeName":"Arsenal","homeCode":"ARS","awayName":"Chelsea","awayCode":"CHE","competition":"Premier League","kickoff":1767290400}"#
        let attributes = try JSONDecoder().decode(FootballActivityAttributes.self, from: Data(old.utf8))
        #expect(attributes.match.sport == nil && attributes.match.kickoffDate == Date(timeIntervalSince1970: 1_767_290_400))
    }
}
