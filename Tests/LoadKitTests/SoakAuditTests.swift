import LoadKit
import Testing

@Suite struct SoakAuditTests {
    // MARK: Events

    @Test func storedEventsBetweenAcknowledgedAndSentAreConsistent() {
        let events = SentEvents(sent: 40, acknowledged: 30)
        #expect(events.audit(lastSeq: 30, stateSeq: 30) == .consistent(unacknowledgedStored: 0))
        #expect(events.audit(lastSeq: 40, stateSeq: 40) == .consistent(unacknowledgedStored: 10))
        #expect(SentEvents().audit(lastSeq: 0, stateSeq: nil) == .consistent(unacknowledgedStored: 0))
    }

    @Test func aLost202AnEventNeverSentAndAStaleStateAreEachCaught() {
        let events = SentEvents(sent: 40, acknowledged: 30)
        #expect(events.audit(lastSeq: 29, stateSeq: 29) == .acknowledgedMissing(1))
        #expect(events.audit(lastSeq: 41, stateSeq: 41) == .neverSent(1))
        #expect(events.audit(lastSeq: 35, stateSeq: 34) == .stateDisagrees(lastSeq: 35, stateSeq: 34))
        #expect(events.audit(lastSeq: 35, stateSeq: nil) == .stateDisagrees(lastSeq: 35, stateSeq: nil))
        #expect(SentEvents().audit(lastSeq: 0, stateSeq: 3) == .stateDisagrees(lastSeq: 0, stateSeq: 3))
        #expect(!events.audit(lastSeq: 29, stateSeq: 29).isConsistent)
        #expect(events.audit(lastSeq: 29, stateSeq: 29).describe(channel: "c1") == "c1: 1 acknowledged events missing")
    }

    // MARK: Channels

    @Test func channelsAtAPNsAreMatchedAgainstTheGatewaysLeavingAmbiguousOnesAside() {
        let clean = SoakChannelAudit(atAPNs: ["a", "b", "c"], expected: ["a", "b"], ambiguous: ["c"])
        #expect(clean.matches && clean.summary == "2 / 2")
        let leak = SoakChannelAudit(atAPNs: ["a", "b", "x"], expected: ["a", "b"])
        #expect(leak.leaked == ["x"] && leak.missing.isEmpty && !leak.matches)
        #expect(leak.summary == "3 / 2 (1 leaked: x)")
        let missing = SoakChannelAudit(atAPNs: ["a"], expected: ["a", "b"])
        #expect(missing.missing == ["b"] && missing.summary == "1 / 2 (1 missing: b)")
    }

    // MARK: Personal jobs

    static let audience = ["t1", "t2", "t3", "t4"]
    static let exact = SoakJobAudit.Counts(status: "done", targeted: 4, sent: 3, failed: ["Unregistered": 1], expired: 0, pending: 0)

    @Test func anExactJobWithADuplicateAfterAKillPassesAndCountsTheDuplicate() {
        let audit = SoakJobAudit(audience: Self.audience, unregistered: ["t4"], counts: Self.exact,
                                 accepted: ["t1": 1, "t2": 2, "t3": 1, "other": 5], gone: ["t4": 1])
        #expect(audit.isExact, "\(audit.problems)")
        #expect(audit.duplicates == 1 && audit.tokensReached == 3)
    }

    @Test func wrongCountsAndTokensThatNeverArrivedAreNamed() {
        var counts = Self.exact
        counts.status = "running"
        counts.pending = 1
        counts.sent = 2
        let audit = SoakJobAudit(audience: Self.audience, unregistered: ["t4"], counts: counts, accepted: ["t1": 1, "t2": 1], gone: [:])
        #expect(audit.problems.contains("status running, not done"))
        #expect(audit.problems.contains("1 still pending"))
        #expect(audit.problems.contains("sent 2, expected 3"))
        #expect(audit.problems.contains("sent 2 + failed 1 + expired 0 ≠ targeted 4"))
        #expect(audit.problems.contains("1 tokens counted as sent never reached APNs"))
        #expect(audit.problems.contains("1 unregistered tokens counted as failed were never sent"))

        var other = Self.exact
        other.targeted = 5
        other.failed = ["Unregistered": 1, "RetriesExhausted": 1]
        let wrong = SoakJobAudit(audience: Self.audience, unregistered: ["t4"], counts: other,
                                 accepted: ["t1": 1, "t2": 1, "t3": 1, "t4": 1], gone: ["t4": 1])
        #expect(wrong.problems.contains("targeted 5 of an audience of 4"))
        #expect(wrong.problems.contains { $0.hasPrefix("failed ") })
        #expect(wrong.problems.contains("1 unregistered tokens were accepted"))
    }

    @Test func aJobNeverStoredMustReachNobody() {
        #expect(SoakJobAudit(audience: Self.audience, unregistered: [], counts: nil, accepted: [:], gone: [:]).isExact)
        let phantom = SoakJobAudit(audience: Self.audience, unregistered: [], counts: nil, accepted: ["t2": 1], gone: [:])
        #expect(phantom.problems == ["1 tokens got a push from a job that was never stored"])
    }

    // MARK: Slow clients

    @Test func cutsAreOnTimeWithinTheToleranceAndTheRightStatus() {
        var cuts = SlowClientCuts(kind: "head", deadlineSeconds: 10, tolerance: 2, expectedStatus: 408)
        cuts.record(.init(afterSeconds: 10.01, status: 408))
        cuts.record(.init(afterSeconds: 11.9, status: 408))
        cuts.record(.init(afterSeconds: 9.0, status: 408))
        cuts.record(.init(afterSeconds: 12.5, status: 408))
        cuts.record(.init(afterSeconds: 10.5, status: nil))
        cuts.recordLostToKill()
        cuts.recordNeverCut()
        #expect(cuts.onTime == 2)
        #expect(cuts.offTime == 4)
        #expect(cuts.lostToKills == 1)
        #expect(cuts.spread.min == 9.0 && cuts.spread.median == 10.5 && cuts.spread.max == 12.5)
        var idle = SlowClientCuts(kind: "idle", deadlineSeconds: 60, tolerance: 2, expectedStatus: nil)
        idle.record(.init(afterSeconds: 60.1, status: nil))
        var merged = SlowClientCuts(kind: "idle", deadlineSeconds: 60, tolerance: 2, expectedStatus: nil)
        merged.merge(idle)
        #expect(merged.onTime == 1 && merged.offTime == 0)
    }
}
