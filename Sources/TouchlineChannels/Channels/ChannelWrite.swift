import APNs
import TouchlineAccess
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// An events or end request for a channel that waits while an earlier write of the channel is
/// in the store; it is validated only when its turn comes, against the state that write left.
enum ChannelRequest {
    case events(HTTPRequest, receivedAt: ContinuousClock.Instant)
    case end(HTTPRequest)

    var request: HTTPRequest {
        switch self {
        case .events(let request, _), .end(let request): request
        }
    }
}

/// What a channel's machine needs of the API's request format: the channel's id and sport,
/// with which an events or end request is validated (``ChannelWrite``).
struct ChannelRules: ChannelMachineRules {
    typealias Request = ChannelRequest
    typealias Waiter = HTTPRequest
    /// What the channel's recording may still keep (nil on a channel that does not record).
    typealias Room = RecordingLedger.Room?
    typealias Write = ChannelWrite

    let channelID: String
    /// The rules of a sports channel's events; nil on other channels.
    let sports: SportsChannel?

    /// A sports channel's feed is live while its state says `live`.
    var followsMatchStatus: Bool { sports != nil }

    func write(_ requests: [ChannelRequest], on state: ChannelMachineState, room: RecordingLedger.Room?, now: UnixTime,
               status: (ChannelEngine) -> ChannelStatus) -> ChannelWrite {
        var write = ChannelWrite(state: state, recordingRoom: room)
        for request in requests {
            do throws(HTTPError) { try write.add(request, rules: self, now: now, status: status) } catch { write.refused(request, error) }
        }
        return write
    }
}

/// One acknowledged write of a channel: the events and end requests it answers, and the state
/// they leave, built on a copy of the channel and applied to it only once the store commits.
///
/// Requests are validated in order, each on top of the ones before it; a refused request is
/// answered at once and leaves the rest unchanged (as if it had not come).
struct ChannelWrite: ChannelMachineWrite {
    /// The engine, content-state and last `seq` the write leaves.
    private(set) var state: ChannelMachineState
    /// The channel's last `seq` before the write: its saved state covers the log up to there.
    private let coveredSeq: Int64
    /// On a channel recording its feed: how many more events and bytes the recording keeps
    /// (its log is never cut; ``RecordingLedger``); nil on other channels.
    private let recordingRoom: RecordingLedger.Room?
    private(set) var events: [StoredEvent] = []
    private(set) var duplicates = 0
    /// When the earliest request with new events arrived (latency bookkeeping).
    private(set) var firstAcceptedAt: ContinuousClock.Instant?
    /// The end, when one of the requests ended the channel.
    private var end: (status: ChannelStatus, end: ChannelEnd)?
    /// What the engine asked for; performed once the write is durable.
    private(set) var engineActions: [ChannelEngine.Action] = []
    /// The requests to answer after the commit, and how.
    private(set) var answers: [(request: HTTPRequest, answer: Answer)] = []
    /// The requests refused while the write was built: answered at once, before it is stored.
    private(set) var refusals: [(request: ChannelRequest, error: HTTPError)] = []

    enum Answer: Sendable {
        /// 202 with this body (an events request).
        case fixed(JSONValue)
        /// 202 with the channel as it is after the write (an end request).
        case channel
    }

    /// A write on top of `state`; `recordingRoom` is what the channel's recording may still keep
    /// (nil on a channel that does not record).
    init(state: ChannelMachineState, recordingRoom: RecordingLedger.Room?) {
        self.state = state
        coveredSeq = state.lastSeq
        self.recordingRoom = recordingRoom
    }

    var engine: ChannelEngine { state.engine }
    var contentState: JSONValue { state.contentState }
    var lastSeq: Int64 { state.lastSeq }
    var acceptedSeqs: [Int64] { events.map(\.seq) }

    /// True when nothing needs storing: every request held only duplicates and stale events
    /// (their answers can go at once).
    var isEmpty: Bool { events.isEmpty && end == nil }

    /// Adds one request, or throws its refusal (then nothing of it is kept).
    mutating func add(_ request: ChannelRequest, rules: ChannelRules, now: UnixTime, status: (ChannelEngine) -> ChannelStatus) throws(HTTPError) {
        switch request {
        case .events(let request, let receivedAt):
            try addEvents(request, receivedAt: receivedAt, rules: rules, now: now)
        case .end(let request):
            try addEnd(request, sports: rules.sports, now: now, status: status)
        }
    }

    /// A request refused while the write was built.
    mutating func refused(_ request: ChannelRequest, _ error: HTTPError) {
        refusals.append((request, error))
    }

    private mutating func addEvents(_ request: HTTPRequest, receivedAt: ContinuousClock.Instant, rules: ChannelRules,
                                    now: UnixTime) throws(HTTPError) {
        let batch = try EventBatch(EventBatch.events(in: request.body), channelID: rules.channelID, sports: rules.sports,
                                          engine: engine, contentState: contentState, lastSeq: lastSeq, now: now)
        state = ChannelMachineState(engine: batch.engine, contentState: batch.contentState, lastSeq: batch.lastSeq)
        events += batch.accepted
        duplicates += batch.duplicates
        engineActions += batch.actions
        if !batch.accepted.isEmpty, firstAcceptedAt == nil { firstAcceptedAt = receivedAt }
        answers.append((request, .fixed(["accepted": .integer(Int64(batch.accepted.count)), "duplicates": .integer(Int64(batch.duplicates)),
                                         "stale": .array(batch.stale.map(JSONValue.integer)), "lastSeq": .integer(batch.lastSeq)])))
    }

    private mutating func addEnd(_ request: HTTPRequest, sports: SportsChannel?, now: UnixTime,
                                 status: (ChannelEngine) -> ChannelStatus) throws(HTTPError) {
        let body = try RequestBody(parsing: request.body.isEmpty ? Array("{}".utf8) : request.body,
                                          allowed: ["finalState", "event", "dismissAt"])
        var finalState = try body.object("finalState")
        // A last event keeps its importance and alert: a critical final change (full time)
        // goes at priority 10 with its alert, like any update.
        var importance = Importance.normal
        var alert: LiveActivityAlert?
        if let event = try body.object("event") {
            guard finalState == nil else { throw body.invalid("event", "cannot be given together with 'finalState'") }
            let change = try EventBatch.change(EventBatch.parse(event, name: "event", sports: sports), to: contentState,
                                               sports: sports, now: now, name: "event")
            (finalState, importance, alert) = (change.state, change.importance, change.alert)
        } else if let finalState {
            try ContentStateLimits.require(finalState, "finalState")
            try EventBatch.requireMatchState(finalState, on: sports, name: "finalState")
        }
        let dismissAt = try body.integer("dismissAt").map { (seconds: Int64) throws(HTTPError) -> UnixTime in
            // APNs takes any Unix second, but a date beyond 2100 is certainly a unit mistake (ms?).
            guard (0...4_102_444_800).contains(seconds) else {
                throw body.invalid("dismissAt", "must be Unix seconds between 0 and 4102444800 (2100-01-01), got \(seconds)")
            }
            return UnixTime(seconds: seconds)
        }
        var ended = engine
        let endActions: [ChannelEngine.Action]
        do {
            endActions = try ended.end(finalState: finalState ?? contentState, importance: importance, alert: alert,
                                       dismissAt: dismissAt, now: now)
        } catch {
            throw EventBatch.refusal(error, name: "finalState")
        }
        state.engine = ended
        if let finalState { state.contentState = finalState }
        engineActions += endActions
        end = (status(ended), ChannelEnd(dismissAt: dismissAt, endedAt: now))
        answers.append((request, .channel))
    }

    /// The new events a recording keeps (all of them on other channels, whose log is cut): those
    /// before the first that passes its room.
    var loggedEvents: [StoredEvent] {
        guard let room = recordingRoom else { return events }
        var bytes = 0
        let fitting = events.prefix(room.events).prefix { event in
            bytes += event.body.count
            return bytes <= room.bytes
        }
        return Array(fitting)
    }

    /// Bytes of the events the recording keeps.
    var loggedBytes: Int { recordingRoom == nil ? 0 : loggedEvents.reduce(0) { $0 + $1.body.count } }

    /// True when the channel records and this write leaves some of its events out: the
    /// recording stops here.
    var cutsRecording: Bool { recordingRoom != nil && loggedEvents.count < events.count }

    /// The store operations, in one batch: the new events (those a recording still has room
    /// for, recorded), the log entries the saved state now covers dropped (unless the channel
    /// records its feed), the state, and the end's status.
    func batch(channelID: String, now: UnixTime) -> WriteBatch {
        var operations: [StoreOperation] = []
        if recordingRoom == nil, !events.isEmpty { operations.append(.truncateEvents(channelID: channelID, throughSeq: coveredSeq)) }
        if !loggedEvents.isEmpty { operations.append(recordingRoom == nil ? .appendEvents(loggedEvents) : .recordEvents(loggedEvents)) }
        operations.append(.updateState(Channel.stateUpdate(id: channelID, engine: engine, contentState: contentState,
                                                                  lastSeq: lastSeq, at: now)))
        if let end { operations.append(.markStatus(channelID: channelID, status: end.status, end: end.end, at: now)) }
        return WriteBatch(operations)
    }

    /// The status the write leaves, when it ended the channel.
    var endedStatus: ChannelStatus? { end?.status }
}
