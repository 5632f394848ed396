import Testing
import TouchlineCore

/// Feed watching in virtual time.
@Suite struct FeedWatchTests {
    let t0 = UnixTime(seconds: 1_767_290_400)

    @Test func aLiveFeedSilentForItsThresholdStallsOnceAndRecoversWithTheNextEvent() {
        var watch = FeedWatch(stallAfter: .seconds(180), watchingFrom: t0)
        #expect(watch.eventsAccepted(previousSeq: 0, seqs: [1, 2], at: t0 + .seconds(10)).isEmpty)
        #expect(watch.stallDeadline(live: true) == t0 + .seconds(190))
        #expect(watch.check(now: t0 + .seconds(189), live: true) == nil)
        #expect(watch.check(now: t0 + .seconds(190), live: true) == .stalled(lastEventAt: t0 + .seconds(10), silence: .seconds(180)))
        #expect(watch.isStalled && watch.stalls == 1)
        // Stalled: nothing more to look for until events come.
        #expect(watch.stallDeadline(live: true) == nil && watch.check(now: t0 + .seconds(900), live: true) == nil && watch.stalls == 1)
        #expect(watch.eventsAccepted(previousSeq: 2, seqs: [3], at: t0 + .seconds(400)) == [.recovered(stalledSince: t0 + .seconds(190))])
        #expect(!watch.isStalled && watch.stallDeadline(live: true) == t0 + .seconds(580))
    }

    @Test func aFeedThatIsNotLiveOrNotWatchedNeverStalls() {
        var halfTime = FeedWatch(stallAfter: .seconds(180), watchingFrom: t0)
        #expect(halfTime.stallDeadline(live: false) == nil && halfTime.check(now: t0 + .seconds(3600), live: false) == nil)
        var off = FeedWatch(stallAfter: .zero, watchingFrom: t0)
        #expect(off.stallDeadline(live: true) == nil && off.check(now: t0 + .seconds(86_400), live: true) == nil)
        // Once live again, the silence counts from the last event, not from the break's end.
        #expect(halfTime.check(now: t0 + .seconds(3600), live: true) == .stalled(lastEventAt: t0, silence: .seconds(3600)))
    }

    @Test func aJumpOfSeqIsAGapWithItsEnds() {
        var watch = FeedWatch(stallAfter: .seconds(180), watchingFrom: t0)
        // A channel's first seq may be anything.
        #expect(watch.eventsAccepted(previousSeq: 0, seqs: [40], at: t0).isEmpty)
        #expect(watch.eventsAccepted(previousSeq: 40, seqs: [41, 44, 45, 50], at: t0) == [.gap(from: 41, to: 44), .gap(from: 45, to: 50)])
        #expect(watch.gaps == 2 && watch.lastGap?.from == 45 && watch.lastGap?.to == 50)
        #expect(watch.eventsAccepted(previousSeq: 50, seqs: [], at: t0 + .seconds(5)).isEmpty)
        #expect(watch.lastEventAt == t0, "no events, no news")
    }
}
