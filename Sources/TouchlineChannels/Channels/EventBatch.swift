import TouchlineAccess
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A batch of provider events checked and applied as a whole, before anything changes.
///
/// Every event is validated, duplicates and stale ones too (a malformed repeat is a client bug
/// worth naming, not something to acknowledge). Duplicates (`seq` equal to the last applied)
/// are then acknowledged and ignored; older ones are reported as stale. Every new event is
/// folded into a copy of the channel's engine and state, and what it makes is validated as the
/// push will carry it (content-state bounds, match state, payload size): the first invalid
/// event refuses the whole batch, naming its index, and the channel is left as it was.
struct EventBatch {
    /// The largest `seq`: 2^53 − 1, the largest integer every JSON implementation reads
    /// exactly. A provider counting past it (or sending Int64.max) would leave the channel
    /// unable to take another event.
    static let maximumSeq: Int64 = (1 << 53) - 1
    /// Events per request at most: a batch is applied on the ingest loop in one go.
    static let maximumEvents = 1_000

    var accepted: [StoredEvent] = []
    /// The importance of each accepted event's change, in the order of `accepted`.
    var acceptedImportance: [Importance] = []
    var duplicates = 0
    var stale: [Int64] = []
    var engine: ChannelEngine
    var contentState: JSONValue
    var lastSeq: Int64
    /// What the engine asked for; performed once the batch is durable.
    var actions: [ChannelEngine.Action] = []

    /// Reads the body: one event object, or `{"events": [...]}`.
    static func events(in body: [UInt8]) throws(HTTPError) -> [JSONValue] {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw HTTPError(status: 400, code: "malformed_json", message: "the body is not valid JSON: \(error)")
        }
        guard case .object(let members) = value else {
            throw HTTPError(status: 400, code: "invalid_body", message: "the body must be an event object or {\"events\": [...]}")
        }
        guard members.contains(where: { $0.isNamed("events") }) else { return [value] }
        let batch = try RequestBody(value, allowed: ["events"], prefix: "")
        guard case .array(let events)? = batch.value("events") else {
            throw HTTPError(status: 400, code: "invalid_field", message: "field 'events' must be an array of event objects")
        }
        guard (1...maximumEvents).contains(events.count) else {
            throw HTTPError(status: 400, code: "invalid_field", message: "field 'events' must hold 1 to \(maximumEvents) events, got \(events.count)")
        }
        return events
    }

    /// Applies `events` to copies of a channel's engine, state and last `seq`; throws the first
    /// problem, naming the event's index.
    init(_ events: [JSONValue], channelID: String, sports: SportsChannel?, engine: ChannelEngine, contentState: JSONValue,
         lastSeq: Int64, now: UnixTime) throws(HTTPError) {
        self.engine = engine
        self.contentState = contentState
        self.lastSeq = lastSeq
        for (index, event) in events.enumerated() {
            let name = "events[\(index)]"
            guard case .object = event else {
                throw HTTPError(status: 400, code: "invalid_event", message: "\(name) must be a JSON object")
            }
            guard let seqValue = event[member: "seq"] else {
                throw HTTPError(status: 400, code: "invalid_event", message: "\(name).seq is missing")
            }
            guard case .integer(let seq) = seqValue, (1...Self.maximumSeq).contains(seq) else {
                throw HTTPError(status: 400, code: "invalid_event", message: "\(name).seq must be an integer from 1 to \(Self.maximumSeq)")
            }
            let parsed = try Self.parse(event, name: name, sports: sports)
            if seq == self.lastSeq {
                duplicates += 1
                continue
            }
            if seq < self.lastSeq {
                stale.append(seq)
                continue
            }
            let change = try Self.change(parsed, to: self.contentState, sports: sports, now: now, name: name)
            do {
                actions += try self.engine.apply(state: change.state, importance: change.importance, alert: change.alert, now: now)
            } catch {
                throw Self.refusal(error, name: name)
            }
            self.contentState = change.state
            self.lastSeq = seq
            accepted.append(StoredEvent(channelID: channelID, seq: seq, receivedAt: now, body: event.encoded))
            acceptedImportance.append(change.importance)
        }
    }

    /// One event, parsed and checked as far as it can be without the channel's state: its
    /// fields by the channel's sport (an event with a `type` on a channel without one is 422
    /// `not_a_sports_channel`), and a patch's size (bounded before it is applied, so the merge's
    /// work is too).
    static func parse(_ event: JSONValue, name: String, sports: SportsChannel?) throws(HTTPError) -> ContentEvent {
        if sports == nil, case .object = event, event[member: "patch"] == nil, event[member: "type"] != nil {
            throw HTTPError(status: 422, code: "not_a_sports_channel",
                            message: "\(name): sports events need a channel created with 'attributes'; send a 'patch' instead")
        }
        let parsed: ContentEvent
        do {
            parsed = try ContentEvent(json: event, sport: sports?.sport)
        } catch {
            throw HTTPError(status: 422, code: "invalid_event", message: "\(name)\(error.field.map { ".\($0)" } ?? ""): \(error.description)")
        }
        if case .patch(let patch) = parsed { try ContentStateLimits.require(patch.patch, "\(name).patch") }
        return parsed
    }

    /// The content-state after `event` (from ``parse(_:name:sports:)``): a merge patch, or a
    /// sports event by the channel's rules; the result is validated as the push will carry it.
    static func change(_ event: ContentEvent, to state: JSONValue, sports: SportsChannel?, now: UnixTime, name: String)
        throws(HTTPError) -> (state: JSONValue, importance: Importance, alert: LiveActivityAlert?) {
        switch event {
        case .patch(let patch):
            let patched = state.applyingMergePatch(patch.patch)
            try ContentStateLimits.require(patched, "\(name): the resulting content-state")
            try requireMatchState(patched, on: sports, name: name)
            return (patched, patch.importance, patch.alert)
        case .sports(let sportEvent):
            guard let sports else {
                throw HTTPError(status: 422, code: "not_a_sports_channel",
                                message: "\(name): sports events need a channel created with 'attributes'; send a 'patch' instead")
            }
            let folded: (state: JSONValue, importance: Importance, alert: LiveActivityAlert?)
            do {
                folded = try sports.apply(sportEvent, to: state, now: now)
            } catch {
                throw HTTPError(status: 422, code: "invalid_event", message: "\(name)\(error.field.map { ".\($0)" } ?? ""): \(error.description)")
            }
            // The reducer's output is held to the same bounds as any state (a goal past the
            // maximum score is refused here, not by the next event's read of the state).
            try requireMatchState(folded.state, on: sports, name: name)
            return folded
        }
    }

    /// On a sports channel (one with match attributes) every state must stay a match
    /// ContentState, or the app could not decode it and later sports events could not fold into
    /// it; other channels take any JSON object.
    static func requireMatchState(_ state: JSONValue, on sports: SportsChannel?, name: String) throws(HTTPError) {
        guard let sports else { return }
        do {
            _ = try sports.validated(state: state)
        } catch {
            throw HTTPError(status: 422, code: "invalid_state",
                            message: "\(name): the resulting state is not a \(sports.sport.rawValue) content-state: \(error)")
        }
    }

    /// The API error for an engine refusal of the input `name`.
    static func refusal(_ failure: ChannelEngine.Failure, name: String) -> HTTPError {
        switch failure {
        case .payloadTooLarge:
            HTTPError(status: 422, code: "payload_too_large", message: "\(name): \(failure.description)")
        case .channelEnded:
            HTTPError(status: 409, code: "channel_ended", message: "the channel has ended; it takes no more events")
        case .channelBroken:
            HTTPError(status: 409, code: "channel_broken", message: failure.description)
        case .noContentState:
            HTTPError(status: 422, code: "no_content_state", message: failure.description)
        }
    }
}
