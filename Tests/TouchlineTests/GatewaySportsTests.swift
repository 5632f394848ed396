import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// Basketball and tennis channels through the provider API: created with their sport, events
/// of their vocabulary folded into their state, another sport's events and unknown sports
/// refused with a message that names them, nothing applied.
@Suite(.gatewaysInProcess) struct GatewaySportsTests {
    @Test func basketballAndTennisChannelsFoldTheirOwnEvents() async throws {
        let (gateway, api) = try GatewayLocalizedAlertTests.start(channels: InMemoryStore(name: "channels"), apns: InMemoryAPNsPair(),
                                                                  alertMode: .text)
        let basketball = #"{"sport": "basketball", "homeName": "Golden State Warriors", "homeCode": "GSW", "awayName": "Boston Celtics", "awayCode": "BOS", "competition": "NBA", "kickoff": 1767290400}"#
        let created = try api.request("POST", "/v1/channels", json: #"{"id": "nba-1", "storagePolicy": "no-storage", "attributes": \#(basketball)}"#)
        #expect(created.status == 201 && created.json?[member: "contentState"]?.string("period") == "", "\(created.text)")
        let posted = try api.request("POST", "/v1/channels/nba-1/events", json: #"{"events": [{"seq": 1, "type": "status", "status": "live"},"#
                                         + #"{"seq": 2, "type": "points", "team": "home", "points": 3, "player": "Curry"}, {"seq": 3, "type": "shot-clock", "seconds": 9}]}"#)
        #expect(posted.status == 202, "\(posted.text)")
        let state = try api.request("GET", "/v1/channels/nba-1").json?[member: "contentState"]
        #expect(state?[member: "homeScore"] == .integer(3) && state?[member: "lastPlay"]?.string("text") == "3 pts: Curry (GSW)")

        let goal = try api.request("POST", "/v1/channels/nba-1/events", json: #"{"seq": 4, "type": "goal", "team": "home"}"#)
        #expect(goal.status == 422 && goal.errorCode == "invalid_event" && goal.text.contains("'goal' is a football event"), "\(goal.text)")
        #expect(try api.request("GET", "/v1/channels/nba-1").json?[member: "lastSeq"] == .integer(3), "nothing applied")

        let tennis = #"{"sport": "tennis", "homeName": "Carlos Alcaraz", "homeCode": "ALC", "awayName": "Jannik Sinner", "awayCode": "SIN", "competition": "ATP Finals", "kickoff": 1767290400, "bestOf": 5}"#
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "atp-1", "storagePolicy": "no-storage", "attributes": \#(tennis)}"#).status == 201)
        let early = try api.request("POST", "/v1/channels/atp-1/events", json: #"{"seq": 1, "type": "point", "team": "home"}"#)
        #expect(early.status == 422 && early.text.contains("a point needs the match live"), "\(early.text)")
        let points = (2...5).map { #"{"seq": \#($0), "type": "point", "team": "home"}"# }.joined(separator: ",")
        let started = try api.request("POST", "/v1/channels/atp-1/events", json: #"{"events": [{"seq": 1, "type": "status", "status": "live"}, \#(points)]}"#)
        #expect(started.status == 202, "\(started.text)")
        let tennisState = try api.request("GET", "/v1/channels/atp-1").json?[member: "contentState"]
        #expect(tennisState?[member: "sets"] == [["home": 1, "away": 0]], "\(String(describing: tennisState))")
        let summary = try api.request("GET", "/v1/channels/atp-1/stats").json?.string("summary")
        #expect(summary == "ALC 1-0 0-0 SIN", "\(String(describing: summary))")
        await gateway.shutdown()
    }

    @Test func anUnknownSportAndAStateOfAnotherSportAreRefused() async throws {
        let (gateway, api) = try GatewayLocalizedAlertTests.start(channels: InMemoryStore(name: "channels"), apns: InMemoryAPNsPair(),
                                                                  alertMode: .text)
        let curling = #"{"sport": "curling", "homeName": "A", "homeCode": "A", "awayName": "B", "awayCode": "B", "competition": "C", "kickoff": 0}"#
        let refused = try api.request("POST", "/v1/channels", json: #"{"id": "c1", "storagePolicy": "no-storage", "attributes": \#(curling)}"#)
        #expect(refused.status == 400 && refused.text.contains("attributes.sport") && refused.text.contains("basketball"), "\(refused.text)")
        let tennis = #"{"sport": "tennis", "homeName": "A", "homeCode": "A", "awayName": "B", "awayCode": "B", "competition": "C", "kickoff": 0}"#
        let wrongState = try api.request("POST", "/v1/channels", json: #"{"id": "t1", "storagePolicy": "no-storage", "attributes": \#(tennis), "initialState": {"status": "scheduled"}}"#)
        #expect(wrongState.status == 400 && wrongState.text.contains("is not a tennis content-state"), "\(wrongState.text)")
        #expect(try api.request("GET", "/v1/channels/c1").status == 404 && api.request("GET", "/v1/channels/t1").status == 404)
        await gateway.shutdown()
    }
}
