import Testing
import TouchlineCore

/// A job whose reason to send ends mid-way (a kickoff whose channel ended), in virtual time:
/// what is in flight is answered and counted, everything else counts as expired, nothing new
/// is sent, and the counts add up to the whole audience.
@Suite struct FanOutCancellationTests {
    static let t0 = UnixTime(seconds: 1_767_225_600)
    static let audience = (0..<25).map { String(format: "%064x", $0) }

    static func sends(_ actions: [FanOutJob.Action]) -> [FanOutJob.TargetID] {
        actions.compactMap { if case .send(_, _, let target) = $0 { target } else { nil } }
    }

    /// Answers fetches from the audience in pages until the job has nothing more to fetch now.
    static func fetched(_ job: inout FanOutJob, _ actions: [FanOutJob.Action], now: UnixTime) -> [FanOutJob.Action] {
        var pending = actions
        var result: [FanOutJob.Action] = []
        while let action = pending.first {
            pending.removeFirst()
            guard case .fetchTargets(let after, let limit) = action else { result.append(action); continue }
            let start = after.map { token in audience.firstIndex(of: token)! + 1 } ?? 0
            let page = Array(audience[start..<min(audience.count, start + limit)])
            job.targetsFetched(page, exhausted: start + limit >= audience.count, now: now)
            pending += job.nextSends(now: now)
        }
        return result
    }

    @Test func expiringMidWaySendsNothingMoreAndAccountsForEveryTarget() {
        var job = FanOutJob(payload: Array("{}".utf8), limits: .init(window: 10, maxInFlight: 4, pageSize: 5), seed: 1)
        let first = Self.sends(Self.fetched(&job, job.nextSends(now: Self.t0), now: Self.t0))
        #expect(first.count == 4)
        _ = job.outcome(of: first[0], result: .accepted, now: Self.t0 + .milliseconds(5))
        // A retry is waiting, three sends are in flight when the channel ends.
        _ = job.outcome(of: first[1], result: .retryLater, now: Self.t0 + .milliseconds(6))
        let ended = Self.t0 + .milliseconds(10)
        job.expire(at: ended)
        let after = Self.fetched(&job, job.nextSends(now: ended), now: ended)
        #expect(Self.sends(after).isEmpty, "a send started after the channel ended")
        _ = job.outcome(of: first[2], result: .accepted, now: ended + .milliseconds(1))
        _ = job.outcome(of: first[3], result: .retryLater, now: ended + .milliseconds(2))
        var later = Self.fetched(&job, job.nextSends(now: ended + .seconds(60)), now: ended + .seconds(60))
        while !job.isFinished, !later.isEmpty { later = Self.fetched(&job, job.nextSends(now: ended + .seconds(61)), now: ended + .seconds(61)) }
        #expect(Self.sends(later).isEmpty)
        #expect(job.isFinished)
        let counters = job.counters
        #expect(counters.targeted == Self.audience.count)
        #expect(counters.sent == 2)
        #expect(counters.expired == Self.audience.count - 2)
        #expect(counters.deadLettered == 0)
    }

    @Test func aJobExpiredBeforeItsFirstSendSendsNothing() {
        var job = FanOutJob(payload: Array("{}".utf8), limits: .init(window: 10, maxInFlight: 4, pageSize: 5), seed: 1)
        job.expire(at: Self.t0)
        let actions = Self.fetched(&job, job.nextSends(now: Self.t0), now: Self.t0)
        #expect(Self.sends(actions).isEmpty && job.isFinished)
        #expect(job.counters.expired == Self.audience.count && job.counters.targeted == Self.audience.count)
    }

    /// Expiring moves the expiration earlier, never later.
    @Test func expireNeverPostponesAnEarlierExpiration() {
        var job = FanOutJob(payload: [], expiration: Self.t0, seed: 1)
        job.expire(at: Self.t0 + .seconds(30))
        #expect(job.expiration == Self.t0)
    }
}
