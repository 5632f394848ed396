import Testing
@testable import Touchline
@testable import TouchlineChannels
@testable import TouchlineCore

/// The bookkeeping behind the ingest-to-APNs latency and the push history.
@Suite struct GatewayChannelActivityTests {
    private func push(_ sequence: UInt64, priority: ChannelEngine.Priority = .powerConsiderate) -> ChannelEngine.OutgoingPush {
        ChannelEngine.OutgoingPush(sequence: sequence, payload: Array(repeating: 0x20, count: 100), priority: priority, expiration: 0,
                                   timestamp: UnixTime(seconds: 1), isEnd: false)
    }

    @Test func latencyRunsFromTheOldestEventThePushCarries() {
        var activity = ChannelActivity()
        let start = ContinuousClock.now
        activity.eventsAccepted(at: start)
        activity.eventsAccepted(at: start + .milliseconds(30))
        activity.pushSent(push(1, priority: .immediate), at: UnixTime(seconds: 100))
        let accepted = activity.pushAnswered(sequence: 1, outcome: "accepted", retried: false, at: start + .milliseconds(50))
        #expect(accepted?.latency == .milliseconds(50))
        #expect(accepted?.priority == .immediate)
        #expect(activity.recentPushes.map(\.outcome) == ["accepted"])
    }

    @Test func aRetriedPushHandsItsEventsToTheNextOneAndADroppedPushForgetsThem() {
        var activity = ChannelActivity()
        let start = ContinuousClock.now
        activity.eventsAccepted(at: start)
        activity.pushSent(push(1), at: UnixTime(seconds: 100))
        activity.eventsAccepted(at: start + .milliseconds(10))
        #expect(activity.pushAnswered(sequence: 1, outcome: "TooManyRequests", retried: true, at: start + .milliseconds(20)) == nil)
        activity.pushSent(push(2), at: UnixTime(seconds: 101))
        #expect(activity.pushAnswered(sequence: 2, outcome: "accepted", retried: false, at: start + .seconds(2))?.latency == .seconds(2))

        activity.eventsAccepted(at: start + .seconds(3))
        activity.pushSent(push(3), at: UnixTime(seconds: 102))
        #expect(activity.pushAnswered(sequence: 3, outcome: "BadExpirationDate", retried: false, at: start + .seconds(4)) == nil)
        activity.pushSent(push(4), at: UnixTime(seconds: 103))
        #expect(activity.pushAnswered(sequence: 4, outcome: "accepted", retried: false, at: start + .seconds(5)) == nil,
                "a push carrying no new event has no ingest latency")
    }

    @Test func theHistoryKeepsTheLastFiftyPushesAndCountsTheLastMinute() {
        var activity = ChannelActivity()
        for n in 1...60 { activity.pushSent(push(UInt64(n)), at: UnixTime(seconds: Int64(n * 10))) }
        #expect(activity.recentPushes.count == ChannelActivity.historyLimit)
        #expect(activity.recentPushes.first?.sequence == 11)
        #expect(activity.pushes(within: .seconds(60), before: UnixTime(seconds: 600)) == 7)
    }
}
