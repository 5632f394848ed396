import Testing
@testable import Touchline
import TouchlineCore
@testable import TouchlinePersonal
import TouchlineRuntime

/// The audiences a channel keeps for its rollovers: the latest kickoff per follow topic, at most
/// sixteen topics, read back from the settings as they were checked when given.
@Suite struct KickoffTemplateTests {
    static func kickoff(_ follows: String, title: String = "Kick-off") -> KickoffTemplate {
        KickoffTemplate(follows: follows, attributesType: "MatchAttributes", attributes: ["homeCode": "ARS"],
                        alert: ["title": .string(title), "body": "ARS v CHE"], priority: 10)
    }

    @Test func theLatestKickoffPerTopicIsKeptAndTheOldestTopicGoesFirst() {
        var audiences: [KickoffTemplate] = []
        audiences = KickoffTemplate.remembering(Self.kickoff("team:ARS"), in: audiences)
        audiences = KickoffTemplate.remembering(Self.kickoff("team:CHE"), in: audiences)
        audiences = KickoffTemplate.remembering(Self.kickoff("team:ARS", title: "Second half"), in: audiences)
        #expect(audiences.map(\.follows) == ["team:CHE", "team:ARS"] && audiences.last?.alert[member: "title"] == "Second half")
        for n in 0..<20 { audiences = KickoffTemplate.remembering(Self.kickoff("topic:\(n)"), in: audiences) }
        #expect(audiences.count == KickoffTemplate.maximumAudiences && audiences.first?.follows == "topic:4")
    }

    @Test func aKeptKickoffReadsBackAndABrokenOneIsNamed() throws {
        let kickoff = Self.kickoff("team:ARS")
        #expect(try KickoffTemplate(json: kickoff.json) == kickoff)
        #expect {
            try KickoffTemplate(json: ["follows": "team:ARS", "attributesType": "M", "attributes": [:], "alert": ["title": "K"], "priority": 10])
        } throws: { error in
            (error as? HTTPError)?.message == "missing field 'alert.body'"
        }
    }
}
