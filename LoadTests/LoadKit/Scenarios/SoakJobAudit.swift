/// One personal job of a soak run against what APNs saw, once the job is done.
///
/// Each job has an audience of its own (the push-to-start tokens following one topic), some of
/// which APNs answers 410 `Unregistered`. The job must end with exact counts: every target
/// counted once (`targeted` = the audience, `sent + failed + expired = targeted`, nothing
/// pending), the 410 tokens failed as `Unregistered` and every other token sent. At APNs every
/// sent token must have arrived at least once; more than once is allowed, since a send in
/// flight at a kill is sent again (at-least-once, docs/personal-pushes.md), and counted as a
/// duplicate. A job whose post was lost and never stored (`counts` nil) must not reach anyone.
public struct SoakJobAudit: Sendable, Equatable {
    /// `GET /v1/personal/{job}`.
    public struct Counts: Sendable, Equatable {
        public var status: String
        public var targeted: Int
        public var sent: Int
        public var failed: [String: Int]
        public var expired: Int
        public var pending: Int

        public init(status: String, targeted: Int, sent: Int, failed: [String: Int], expired: Int, pending: Int) {
            (self.status, self.targeted, self.sent, self.failed, self.expired, self.pending) = (status, targeted, sent, failed, expired, pending)
        }
    }

    /// What is wrong, one line each; empty when the job is exact.
    public let problems: [String]
    /// Accepted pushes beyond the first, over the audience.
    public let duplicates: Int
    /// Distinct tokens APNs accepted a push for.
    public let tokensReached: Int

    /// - Parameters:
    ///   - audience: the tokens following the job's topic when it was posted.
    ///   - unregistered: those of them APNs answers 410.
    ///   - counts: the job as the gateway shows it; nil for a job that was never stored.
    ///   - accepted: pushes APNs accepted, by token (tokens outside the audience are ignored).
    ///   - gone: 410 answers by token.
    public init(audience: [String], unregistered: Set<String>, counts: Counts?, accepted: [String: Int], gone: [String: Int]) {
        var problems: [String] = []
        let reached = audience.filter { (accepted[$0] ?? 0) > 0 }
        duplicates = audience.reduce(0) { $0 + max(0, (accepted[$1] ?? 0) - 1) }
        tokensReached = reached.count
        guard let counts else {
            if !reached.isEmpty { problems.append("\(reached.count) tokens got a push from a job that was never stored") }
            self.problems = problems
            return
        }
        let live = audience.filter { !unregistered.contains($0) }
        let failedTotal = counts.failed.values.reduce(0, +)
        let expectedFailed = unregistered.isEmpty ? [:] : ["Unregistered": audience.count - live.count]
        if counts.status != "done" { problems.append("status \(counts.status), not done") }
        if counts.targeted != audience.count { problems.append("targeted \(counts.targeted) of an audience of \(audience.count)") }
        if counts.sent + failedTotal + counts.expired != counts.targeted {
            problems.append("sent \(counts.sent) + failed \(failedTotal) + expired \(counts.expired) ≠ targeted \(counts.targeted)")
        }
        if counts.pending != 0 { problems.append("\(counts.pending) still pending") }
        if counts.sent != live.count { problems.append("sent \(counts.sent), expected \(live.count)") }
        if counts.failed != expectedFailed { problems.append("failed \(counts.failed.sorted { $0.key < $1.key }), expected \(expectedFailed)") }
        let neverArrived = live.count { (accepted[$0] ?? 0) == 0 }
        if neverArrived > 0 { problems.append("\(neverArrived) tokens counted as sent never reached APNs") }
        let acceptedDead = unregistered.count { (accepted[$0] ?? 0) > 0 }
        if acceptedDead > 0 { problems.append("\(acceptedDead) unregistered tokens were accepted") }
        let unasked = Set(audience).intersection(unregistered).count { (gone[$0] ?? 0) == 0 }
        if unasked > 0 { problems.append("\(unasked) unregistered tokens counted as failed were never sent") }
        self.problems = problems
    }

    public var isExact: Bool { problems.isEmpty }
}
