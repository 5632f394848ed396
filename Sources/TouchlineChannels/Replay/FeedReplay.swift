import Measurements
import TouchlineCore
import TouchlineRuntime

/// A recorded feed run through the channel's real reducers and engine in virtual time, with a
/// policy to try: the pushes the gateway would make, when, at which priority, and how long each
/// event waited for the push that carried it (docs/replay.md).
///
/// Each input is applied at its receive time exactly as the ingest loop applies it
/// (``EventBatch``: the same validation, reducer and engine); the engine's pushes go to a
/// simulated APNs that accepts every push after ``Settings/apnsLatency``, and its timers fire
/// in virtual time. Nothing is sent and nothing is stored: the same feed and settings always
/// give the same result.
struct FeedReplay {
    struct Settings: Sendable {
        /// The policy to try (the recorded channel's own, or another).
        var policy: ChannelPolicy
        /// How long the simulated APNs takes to accept a push; the engine holds the next push
        /// until the answer, as it does live.
        var apnsLatency: Duration = .milliseconds(20)
        /// How long after the last input the engine keeps running (pending pushes, the end's
        /// grace period) before the replay stops.
        var tail: Duration = .seconds(3600)
    }

    /// One push the engine made.
    struct Push: Sendable, Equatable {
        var sentAt: UnixTime
        var priority: ChannelEngine.Priority
        var isEnd: Bool
        /// The payload's size in bytes.
        var bytes: Int
    }

    /// One event the channel accepted.
    struct Event: Sendable, Equatable {
        var receivedAt: UnixTime
        var importance: Importance
        /// False for an event that left the state as it was (nothing to push).
        var changedState: Bool
        /// When the push that first carried its state reached APNs (nil: none did).
        var deliveredAt: UnixTime?
        /// That push's priority.
        var priority: ChannelEngine.Priority?

        /// Ingest to APNs, for a delivered event.
        var delay: Duration? { deliveredAt.map { $0 - receivedAt } }
    }

    struct Result: Sendable {
        var header: RecordedFeed.Header
        var settings: Settings
        var pushes: [Push] = []
        var events: [Event] = []
        /// Events whose `seq` repeated the last one, and the `seq`s older than it.
        var duplicates = 0
        var stale = 0
        var counters = ChannelEngine.Counters()
        /// The fewest priority-10 pushes left in the rolling hour, seen after each one.
        var lowestBudgetRemaining: Int
        /// When APNs accepted the end push (nil: the feed did not end the channel).
        var endDeliveredAt: UnixTime?
        /// The last input's receive time (nil: the feed has none).
        var lastInputAt: UnixTime?
        /// The last instant simulated.
        var finishedAt: UnixTime
        /// Steps the simulation took (an input, a timer, an answer each): what a replay costs,
        /// in proportion to the feed's inputs and the pushes they make, never to the time the
        /// feed covers (virtual time jumps from one to the next).
        var steps = 0
    }

    /// Runs `feed`; throws the first input the channel would have refused, naming its line.
    static func run(_ feed: RecordedFeed, settings: Settings) throws(RecordedFeed.LineError) -> Result {
        var simulation = Simulation(feed: feed, settings: settings)
        try simulation.run()
        return simulation.result
    }

    /// The virtual-time loop: inputs at their receive times, the engine's timers, APNs' answers.
    private struct Simulation {
        let feed: RecordedFeed
        let settings: Settings
        let sports: SportsChannel?
        var engine: ChannelEngine
        var state: JSONValue
        var lastSeq: Int64 = 0
        var result: Result
        var timer: UnixTime?
        /// The push in flight and when APNs answers it (the engine sends one at a time).
        var answer: (at: UnixTime, sequence: UInt64, isEnd: Bool)?
        /// Events whose state no push has carried yet.
        var waiting: [Int] = []
        var closed = false

        init(feed: RecordedFeed, settings: Settings) {
            self.feed = feed
            self.settings = settings
            let header = feed.header
            sports = header.channel.sports
            engine = ChannelEngine(policy: settings.policy, storage: header.channel.storage, jitterSeed: Channel.jitterSeed(for: header.channelID),
                                   now: header.createdAt)
            state = header.channel.initialState
            result = Result(header: header, settings: settings, lowestBudgetRemaining: settings.policy.priorityBudgetPerHour,
                            finishedAt: header.createdAt)
        }

        mutating func run() throws(RecordedFeed.LineError) {
            let entries = feed.entries
            let stopAt = (entries.last?.receivedAt ?? feed.header.createdAt) + settings.tail
            var next = 0
            while !closed {
                result.steps += 1
                let input = next < entries.count ? entries[next].receivedAt : nil
                if let answer, answer.at <= min(timer ?? answer.at, input ?? answer.at) {
                    self.answer = nil
                    if answer.isEnd { result.endDeliveredAt = answer.at }
                    perform(engine.pushSucceeded(sequence: answer.sequence, now: answer.at), now: answer.at)
                } else if let timer, timer <= input ?? timer, input != nil || timer <= stopAt {
                    self.timer = nil
                    perform(engine.tick(now: timer), now: timer)
                } else if let input {
                    try apply(entries[next], line: next + 2)
                    result.lastInputAt = input
                    next += 1
                } else {
                    break
                }
            }
            result.counters = engine.counters
        }

        private mutating func apply(_ entry: RecordedFeed.Entry, line: Int) throws(RecordedFeed.LineError) {
            let now = entry.receivedAt
            do throws(HTTPError) {
                switch entry.input {
                case .event(let event):
                    let changes = engine.counters.stateChanges
                    let batch = try EventBatch([event], channelID: feed.header.channelID, sports: sports, engine: engine, contentState: state,
                                               lastSeq: lastSeq, now: now)
                    (engine, state, lastSeq) = (batch.engine, batch.contentState, batch.lastSeq)
                    result.duplicates += batch.duplicates
                    result.stale += batch.stale.count
                    if let importance = batch.acceptedImportance.first {
                        let changed = engine.counters.stateChanges > changes
                        if changed { waiting.append(result.events.count) }
                        result.events.append(Event(receivedAt: now, importance: importance, changedState: changed))
                    }
                    perform(batch.actions, now: now)
                case .end(let finalState, let dismissAt):
                    let actions: [ChannelEngine.Action]
                    do {
                        actions = try engine.end(finalState: finalState ?? state, dismissAt: dismissAt, now: now)
                    } catch {
                        throw EventBatch.refusal(error, name: "end.finalState")
                    }
                    if let finalState { state = finalState }
                    perform(actions, now: now)
                }
            } catch {
                throw RecordedFeed.LineError(line: entry.line ?? line, message: "the channel refuses it: \(error.message)")
            }
        }

        private mutating func perform(_ actions: [ChannelEngine.Action], now: UnixTime) {
            result.finishedAt = max(result.finishedAt, now)
            for action in actions {
                switch action {
                case .send(let push):
                    result.pushes.append(Push(sentAt: now, priority: push.priority, isEnd: push.isEnd, bytes: push.payload.count))
                    let arrival = now + settings.apnsLatency
                    for index in waiting {
                        result.events[index].deliveredAt = arrival
                        result.events[index].priority = push.priority
                    }
                    waiting = []
                    answer = (arrival, push.sequence, push.isEnd)
                    if push.priority == .immediate {
                        result.lowestBudgetRemaining = min(result.lowestBudgetRemaining, engine.priorityBudgetRemaining(now: now))
                    }
                case .armTimer(let at):
                    timer = at
                case .deleteChannel, .markBroken:
                    closed = true
                case .persist:
                    break
                }
            }
        }
    }
}
