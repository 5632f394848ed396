/// Carries a match past Apple's 8-hour limit on a Live Activity: before the activities on the
/// channel's APNs channel reach `maximumActivityAge`, the match moves to a successor APNs
/// channel, the match's audience is started again on it (push-to-start with the current state),
/// and the activities on the previous channel are ended with the same state, so that no phone
/// shows two (docs/channel-engine.md, "Past the 8-hour limit").
///
/// Pure: inputs with their time, actions out; the shell creates the APNs channel, saves, stores
/// the start job, sends the previous channel's end and deletes it, and reports back. Every step
/// is saved before the next begins, so a restart resumes the step it was in (``resumed(isLive:)``):
/// - `creatingSuccessor` is saved before APNs is asked, as a channel's create intent is;
/// - the successor becomes the channel's APNs channel in the same commit as `switching` (which
///   keeps the previous id for its end and deletion), so from then on every push goes to it;
/// - the start job's id follows from the channel and the ``generation``, so storing it again
///   after a restart finds it stored instead of starting the audience twice;
/// - the previous channel is ended, then deleted, each retried with back-off until APNs confirms.
///
/// Rollovers of one channel are at least a `minimumInterval` apart, whoever asks (an operator's
/// `POST .../rollover` or the age): each starts every follower again, so they must not come
/// faster than a match needs them. The time the last one began is saved with the rest.
public struct ActivityRollover: Sendable, Equatable, Codable {
    public enum Stage: Sendable, Equatable, Codable {
        /// The current APNs channel's activities are young enough.
        case live
        /// A successor is to be created at APNs (or its create is out).
        case creatingSuccessor
        /// APNs created `successor`: it is to be saved as the channel's APNs channel.
        case switching(successor: String, previous: String)
        /// The channel publishes to the successor; the push-to-start job is to be stored.
        case startingAudience(previous: String)
        /// The start job is stored; the previous channel's activities are to be ended.
        case endingPrevious(previous: String)
        /// They are ended; the previous APNs channel is to be deleted.
        case deletingPrevious(previous: String)
    }

    public enum Action: Sendable, Equatable {
        /// Save the rollover as it is now (before anything that follows in the list).
        case persist
        /// Ask APNs for a new channel with the channel's storage policy; report
        /// ``successorCreated(_:replacing:isLive:now:)`` or ``stepFailed(now:)``.
        case createSuccessor
        /// Save `successor` as the channel's APNs channel together with the rollover (now
        /// `switching`), in one commit; report ``switched(isLive:)`` or ``stepFailed(now:)``.
        case switchTo(successor: String)
        /// Store the job that starts the match's audience on the current APNs channel with the
        /// current state, with the id of this `generation`; report ``audienceStarted()``.
        case startAudience(generation: Int)
        /// End the activities on `previous` now, with the current state; report ``previousEnded()``.
        case endPrevious(String)
        /// Delete the APNs channel `previous`; report ``previousDeleted(maximumAge:)``.
        case deletePrevious(String)
        /// Delete an APNs channel created for a match that ended meanwhile.
        case deleteUnneeded(String)
        /// Call ``check(now:maximumAge:canRoll:)`` at this time.
        case armTimer(at: UnixTime)
        /// Call ``retryDue(isLive:)`` at this time.
        case armRetry(at: UnixTime)
    }

    /// Back-off between attempts at a failed step: 1 s doubling to 5 min.
    public static var retryBackoff: Backoff { Backoff(initial: .seconds(1), maximum: .seconds(300), multiplier: 2, jitter: 0) }

    public private(set) var stage: Stage
    /// When the current APNs channel was created: no activity on it started earlier.
    public private(set) var generationStartedAt: UnixTime
    /// The current APNs channel's place in the match: 1 for the first, one more per rollover.
    public private(set) var generation: Int
    /// When the last rollover began (nil: never): the next may begin a minimum interval later.
    public private(set) var lastStartedAt: UnixTime?
    /// Failed attempts at the current step, in a row.
    private var attempts: Int

    /// Why an operator's rollover does not begin.
    public enum Refusal: Error, Sendable, Equatable {
        /// One is under way.
        case underWay
        /// The last one began less than the minimum interval ago: the next may begin at `until`.
        case tooSoon(until: UnixTime)
    }

    /// A channel whose first APNs channel was created at `createdAt`.
    public init(generationStartedAt createdAt: UnixTime) {
        stage = .live
        generationStartedAt = createdAt
        generation = 1
        attempts = 0
    }

    /// When the current channel's activities must move, with `maximumAge` (zero: never).
    public func due(maximumAge: Duration) -> UnixTime? {
        maximumAge > .zero ? generationStartedAt + maximumAge : nil
    }

    /// The earliest time the next rollover may begin: `minimumInterval` after the last began.
    public func earliestStart(minimumInterval: Duration) -> UnixTime? {
        lastStartedAt.map { $0 + minimumInterval }
    }

    // MARK: Inputs

    /// An operator asks for a rollover now (`POST /v1/channels/{id}/rollover`): refused while one
    /// is under way, and until `minimumInterval` has passed since the last began.
    public mutating func start(now: UnixTime, minimumInterval: Duration) -> Result<[Action], Refusal> {
        guard stage == .live else { return .failure(.underWay) }
        if let earliest = earliestStart(minimumInterval: minimumInterval), now < earliest { return .failure(.tooSoon(until: earliest)) }
        lastStartedAt = now
        stage = .creatingSuccessor
        attempts = 0
        return .success([.persist, .createSuccessor])
    }

    /// The operator's rollover could not be saved: it did not begin (the request is refused), and
    /// the last start is again `previous`, what ``lastStartedAt`` was before it.
    public mutating func startNotSaved(previous: UnixTime?) {
        guard stage == .creatingSuccessor else { return }
        stage = .live
        lastStartedAt = previous
    }

    /// Time passed, or what `canRoll` depends on changed (the match's audience became known, the
    /// match is live): starts the rollover when due and possible, else says when to look again.
    /// `canRoll` is false while the match is not live or its audience is not known. A rollover
    /// due sooner than `minimumInterval` after the last one waits until then.
    public mutating func check(now: UnixTime, maximumAge: Duration, minimumInterval: Duration, canRoll: Bool) -> [Action] {
        guard stage == .live, let aged = due(maximumAge: maximumAge) else { return [] }
        let due = max(aged, earliestStart(minimumInterval: minimumInterval) ?? aged)
        guard now >= due else { return [.armTimer(at: due)] }
        guard canRoll, case .success(let actions) = start(now: now, minimumInterval: minimumInterval) else { return [] }
        return actions
    }

    /// APNs created `successor`; `previous` is the channel's APNs channel until now. A match that
    /// is no longer live needs no successor: it is deleted again.
    public mutating func successorCreated(_ successor: String, replacing previous: String, isLive: Bool, now: UnixTime) -> [Action] {
        guard stage == .creatingSuccessor else { return [.deleteUnneeded(successor)] }
        attempts = 0
        guard isLive else {
            stage = .live
            return [.persist, .deleteUnneeded(successor)]
        }
        stage = .switching(successor: successor, previous: previous)
        generationStartedAt = now
        generation += 1
        return [.switchTo(successor: successor)]
    }

    /// The successor is saved as the channel's APNs channel. A match that ended meanwhile starts
    /// no audience: its previous activities are ended at once.
    public mutating func switched(isLive: Bool) -> [Action] {
        guard case .switching(_, let previous) = stage else { return [] }
        attempts = 0
        guard isLive else {
            stage = .endingPrevious(previous: previous)
            return [.persist, .endPrevious(previous)]
        }
        stage = .startingAudience(previous: previous)
        return [.persist, .startAudience(generation: generation)]
    }

    /// The start job is stored (or was already).
    public mutating func audienceStarted() -> [Action] {
        guard case .startingAudience(let previous) = stage else { return [] }
        stage = .endingPrevious(previous: previous)
        attempts = 0
        return [.persist, .endPrevious(previous)]
    }

    /// APNs accepted the previous channel's end.
    public mutating func previousEnded() -> [Action] {
        guard case .endingPrevious(let previous) = stage else { return [] }
        stage = .deletingPrevious(previous: previous)
        attempts = 0
        return [.persist, .deletePrevious(previous)]
    }

    /// APNs deleted the previous channel (or no longer knew it): the rollover is over; the next
    /// is due `maximumAge` after the successor's creation, and not before `minimumInterval`
    /// after this one began.
    public mutating func previousDeleted(maximumAge: Duration, minimumInterval: Duration) -> [Action] {
        guard case .deletingPrevious = stage else { return [] }
        stage = .live
        attempts = 0
        guard let aged = due(maximumAge: maximumAge) else { return [.persist] }
        return [.persist, .armTimer(at: max(aged, earliestStart(minimumInterval: minimumInterval) ?? aged))]
    }

    /// The current step failed (APNs or the store): it is tried again after a back-off.
    public mutating func stepFailed(now: UnixTime) -> [Action] {
        guard stage != .live else { return [] }
        let delay = Self.retryBackoff.delay(attempt: attempts)
        attempts += 1
        return [.armRetry(at: now + delay)]
    }

    /// The back-off after a failure is over: the current step again, after saving the stage
    /// (the failure may have been that save).
    public mutating func retryDue(isLive: Bool) -> [Action] {
        let actions = resumed(isLive: isLive)
        return actions.isEmpty || actions.first == .persist ? actions : [.persist] + actions
    }

    /// The gateway restarted: the step the saved stage was in, again. (A successor whose
    /// create answer a crash lost stays at APNs unaccounted for: docs/channel-engine.md.)
    public mutating func resumed(isLive: Bool) -> [Action] {
        switch stage {
        case .live: return []
        case .creatingSuccessor:
            guard isLive else {
                stage = .live
                return [.persist]
            }
            return [.createSuccessor]
        case .switching(let successor, _): return [.switchTo(successor: successor)]
        case .startingAudience(let previous):
            guard isLive else {
                stage = .endingPrevious(previous: previous)
                return [.persist, .endPrevious(previous)]
            }
            return [.startAudience(generation: generation)]
        case .endingPrevious(let previous): return [.endPrevious(previous)]
        case .deletingPrevious(let previous): return [.deletePrevious(previous)]
        }
    }

    private enum CodingKeys: String, CodingKey { case stage, generationStartedAt, generation, attempts, lastStartedAt }

    /// As the channel's settings keep it: times in Unix nanoseconds. A rollover saved before
    /// `lastStartedAt` existed counts the start of its current generation (if it is not the
    /// first) as the last rollover's, so a restart grants no early one.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        stage = try c.decode(Stage.self, forKey: .stage)
        generationStartedAt = UnixTime(nanoseconds: try c.decode(Int64.self, forKey: .generationStartedAt))
        generation = try c.decode(Int.self, forKey: .generation)
        attempts = try c.decodeIfPresent(Int.self, forKey: .attempts) ?? 0
        lastStartedAt = try c.decodeIfPresent(Int64.self, forKey: .lastStartedAt).map(UnixTime.init(nanoseconds:))
            ?? (generation > 1 ? generationStartedAt : nil)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(stage, forKey: .stage)
        try c.encode(generationStartedAt.nanoseconds, forKey: .generationStartedAt)
        try c.encode(generation, forKey: .generation)
        try c.encode(attempts, forKey: .attempts)
        try c.encodeIfPresent(lastStartedAt?.nanoseconds, forKey: .lastStartedAt)
    }

    /// The previous APNs channel still to end or delete.
    public var previousChannel: String? {
        switch stage {
        case .switching(_, let previous), .startingAudience(let previous), .endingPrevious(let previous), .deletingPrevious(let previous): previous
        case .live, .creatingSuccessor: nil
        }
    }

    /// The APNs channel the rollover holds besides the channel's own: deleted with the channel
    /// if the provider deletes it in the middle of a rollover (the previous one, or a successor
    /// not saved as the channel's yet).
    public var otherChannel: String? {
        if case .switching(let successor, _) = stage { return successor }
        return previousChannel
    }
}
