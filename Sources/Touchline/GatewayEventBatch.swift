import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A batch of provider events checked and applied as a whole, before anything changes.
///
/// Duplicates (`seq` equal to the last applied) are acknowledged and ignored; older ones are
/// reported as stale. Every new event is validated and folded into a copy of the channel's
/// engine: the first invalid or oversized event refuses the whole batch, naming its index, and
/// the channel is left as it was.
struct GatewayEventBatch {
    var accepted: [StoredEvent] = []
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
        guard members.contains(where: { $0.name == "events" }) else { return [value] }
        let batch = try GatewayRequestBody(value, allowed: ["events"], prefix: "")
        guard case .array(let events)? = batch.value("events") else {
            throw HTTPError(status: 400, code: "invalid_field", message: "field 'events' must be an array of event objects")
        }
        guard !events.isEmpty else { throw HTTPError(status: 400, code: "invalid_field", message: "field 'events' is empty") }
        return events
    }

    /// Applies `events` to a copy of `channel`; throws the first problem, naming the event's index.
    init(_ events: [JSONValue], for channel: GatewayChannel, now: UnixTime) throws(HTTPError) {
        engine = channel.engine
        contentState = channel.contentState
        lastSeq = channel.lastSeq
        for (index, event) in events.enumerated() {
            let name = "events[\(index)]"
            guard case .object = event else {
                throw HTTPError(status: 400, code: "invalid_event", message: "\(name) must be a JSON object")
            }
            guard let seqValue = event[member: "seq"] else {
                throw HTTPError(status: 400, code: "invalid_event", message: "\(name).seq is missing")
            }
            guard case .integer(let seq) = seqValue, seq > 0 else {
                throw HTTPError(status: 400, code: "invalid_event", message: "\(name).seq must be a positive integer")
            }
            if seq == lastSeq {
                duplicates += 1
                continue
            }
            if seq < lastSeq {
                stale.append(seq)
                continue
            }
            let parsed: ContentEvent
            do {
                parsed = try ContentEvent(json: event)
            } catch {
                throw HTTPError(status: 422, code: "invalid_event", message: "\(name)\(error.field.map { ".\($0)" } ?? ""): \(error.description)")
            }
            let change = try Self.change(parsed, to: contentState, attributes: channel.attributes, now: now, name: name)
            do {
                actions += try engine.apply(state: change.state, importance: change.importance, alert: change.alert, now: now)
            } catch {
                throw Self.refusal(error, name: name)
            }
            contentState = change.state
            lastSeq = seq
            accepted.append(StoredEvent(channelID: channel.id, seq: seq, receivedAt: now, body: event.encoded))
        }
    }

    /// The content-state after `event`: a merge patch, or a sports event through the reducer.
    static func change(_ event: ContentEvent, to state: JSONValue, attributes: MatchAttributes?, now: UnixTime, name: String)
        throws(HTTPError) -> (state: JSONValue, importance: Importance, alert: LiveActivityAlert?) {
        switch event {
        case .patch(let patch):
            let patched = state.applyingMergePatch(patch.patch)
            try requireMatchState(patched, on: attributes, name: name)
            return (patched, patch.importance, patch.alert)
        case .sports(let sports):
            guard let attributes else {
                throw HTTPError(status: 422, code: "not_a_sports_channel",
                                message: "\(name): sports events need a channel created with 'attributes'; send a 'patch' instead")
            }
            let match: MatchContentState
            do {
                match = try MatchContentState(json: state)
            } catch {
                throw HTTPError(status: 422, code: "invalid_state", message: "\(name): the channel's state is not a match state: \(error)")
            }
            let folded = SportsReducer(attributes: attributes).apply(sports, to: match, at: now)
            return (folded.state.json, folded.importance, folded.alert)
        }
    }

    /// On a sports channel (one with match attributes) every state must stay a match
    /// ContentState, or the app could not decode it and later sports events could not fold into
    /// it; other channels take any JSON object.
    static func requireMatchState(_ state: JSONValue, on attributes: MatchAttributes?, name: String) throws(HTTPError) {
        guard attributes != nil else { return }
        do {
            _ = try MatchContentState(json: state)
        } catch {
            throw HTTPError(status: 422, code: "invalid_state", message: "\(name): the resulting state is not a match content-state: \(error)")
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
