import Testing
import TouchlineCore

struct ChannelPartitioningTests {
    @Test func aChannelsPartitionIsFNV1aOfItsSubjectTokenModuloTheCount() throws {
        // FNV-1a 32-bit reference values: "a" is 0xe40c292c, "foobar" is 0xbf9cf968.
        let whole = try #require(ChannelPartitioning(count: 1_024))
        #expect(whole.partition(of: "a") == Int(0xe40c_292c % 1_024))
        #expect(whole.partition(of: "foobar") == Int(0xbf9c_f968 % 1_024))
        let sixtyFour = try #require(ChannelPartitioning(count: 64))
        #expect((0..<1_000).allSatisfy { (0..<64).contains(sixtyFour.partition(of: "match-\($0)")) })
    }

    @Test func dotsBecomeTildesSoEveryChannelIsOneSubjectTokenAndNoTwoShareOne() {
        #expect(ChannelPartitioning.subjectToken("league:epl.2026") == "league:epl~2026")
        #expect(ChannelPartitioning.subjectToken("match-1") == "match-1")
        // '~' is not allowed in a channel id, so the mapping is one to one over valid ids.
        #expect(ChannelPartitioning.subjectToken("a.b") != ChannelPartitioning.subjectToken("a-b"))
        #expect(ChannelPartitioning.subjectToken("a.b") != ChannelPartitioning.subjectToken("a_b"))
    }

    @Test func aCountOutsideOneTo1024IsRefused() {
        #expect(ChannelPartitioning(count: 0) == nil)
        #expect(ChannelPartitioning(count: 1_025) == nil)
        #expect(ChannelPartitioning(count: 1)?.partition(of: "anything") == 0)
    }
}
