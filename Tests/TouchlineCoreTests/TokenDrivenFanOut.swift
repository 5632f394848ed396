import TouchlineCore

/// A fan-out job driven by token, as these tests write their answers. The job names each
/// send's target by an id (``FanOutJob/TargetID``); this keeps the id of each token's last send,
/// reports an outcome by token under it, and shows actions without ids, to compare.
@dynamicMemberLookup
struct TokenDrivenFanOut {
    /// An action of the job, its send without the target id.
    enum Step: Hashable {
        case fetchTargets(after: String?, limit: Int)
        case send(token: String, attempt: Int)
        case armTimer(at: UnixTime)
        case deactivateToken(String, timestampMilliseconds: Int64?)
        case deadLetter(token: String, reason: String)
    }

    private(set) var job: FanOutJob
    private var lastSends: [String: FanOutJob.TargetID] = [:]

    init(_ job: FanOutJob) { self.job = job }

    subscript<T>(dynamicMember keyPath: KeyPath<FanOutJob, T>) -> T { job[keyPath: keyPath] }

    mutating func nextSends(now: UnixTime) -> [Step] { steps(job.nextSends(now: now)) }

    mutating func timerFired(now: UnixTime) -> [Step] { steps(job.timerFired(now: now)) }

    mutating func targetsFetched(_ tokens: [String], through last: String? = nil, exhausted: Bool, now: UnixTime) {
        job.targetsFetched(tokens, through: last, exhausted: exhausted, now: now)
    }

    /// The outcome of the last send to `token`; nothing for a token never sent.
    mutating func outcome(token: String, result: PersonalOutcome, now: UnixTime) -> [Step] {
        guard let target = lastSends[token] else { return [] }
        return steps(job.outcome(of: target, result: result, now: now))
    }

    mutating func takeProgress() -> FanOutProgress { job.takeProgress() }

    /// Whether the job holds `token` as a target that has not ended.
    func holds(_ token: String) -> Bool { job.heldTokens.contains(token) }

    private mutating func steps(_ actions: [FanOutJob.Action]) -> [Step] {
        actions.map { action in
            switch action {
            case .fetchTargets(let after, let limit): return .fetchTargets(after: after, limit: limit)
            case .send(let token, let attempt, let target):
                lastSends[token] = target
                return .send(token: token, attempt: attempt)
            case .armTimer(let time): return .armTimer(at: time)
            case .deactivateToken(let token, let timestamp): return .deactivateToken(token, timestampMilliseconds: timestamp)
            case .deadLetter(let token, let reason): return .deadLetter(token: token, reason: reason)
            }
        }
    }
}
