import Testing
@testable import Touchline
import TouchlineCore
@testable import TouchlinePersonal

/// Apps as a map (``PerApp``): the default app is an entry like the others, listed first.
@Suite struct PerAppTests {
    @Test func theDefaultAppIsListedFirstThenTheOthersByName() {
        let apps = PerApp(["tv": 3, AppChannelID.defaultApp: 1, "alpha": 2])
        #expect(apps.names == [AppChannelID.defaultApp, "alpha", "tv"])
        #expect(apps.all == [1, 2, 3])
        #expect(apps.entries.map(\.name) == apps.names)
    }

    @Test func eachAppGetsItsOwnValueAndAnAppNotServedTheDefaultAppsAsAnUnqualifiedIdDoes() {
        let apps = PerApp([AppChannelID.defaultApp: "default pools", "tv": "tv pools"])
        #expect(apps["tv"] == "tv pools")
        #expect(apps[AppChannelID.defaultApp] == "default pools")
        #expect(apps.contains("tv") && !apps.contains("radio"))
        #expect(apps["radio"] == "default pools")
    }

    @Test func mappingKeepsEveryAppAndItsName() {
        let apps = PerApp([AppChannelID.defaultApp: 1, "tv": 2]).map { name, value in "\(name):\(value * 10)" }
        #expect(apps.all == ["default:10", "tv:20"])
    }
}
