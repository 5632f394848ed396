import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A channel's recording of its provider feed (`recordFeed: true` at creation): its accepted
/// events stay in the store's event log with their receive times instead of being dropped once
/// the saved state covers them, so `GET /v1/channels/{id}/events/export` can write the feed for
/// `touchline replay` (docs/replay.md). The state before the first event is kept with the
/// channel's settings, since the feed starts from it.
package struct FeedRecording: Sendable, Equatable {
    /// Events a recording keeps at most: a whole day at more than one a second. Past it the
    /// channel goes on as usual and its later events are not kept (the export then ends there,
    /// followed by the end).
    package static let maximumEvents = 100_000

    /// The content-state before the first event.
    var initialState: JSONValue

    /// As the settings keep it.
    var json: JSONValue { ["initialState": initialState] }

    init(initialState: JSONValue) {
        self.initialState = initialState
    }

    /// Whether a stored channel records its feed (its settings hold a recording).
    package static func isRecorded(_ record: ChannelRecord) -> Bool {
        (try? JSONParser.parse(Array(record.policyJSON.utf8)))?[member: "recording"] != nil
    }

    /// Reads the settings' copy; throws what is wrong with it.
    init(json: JSONValue) throws(GatewayError) {
        guard case .object = json, let state = json[member: "initialState"], case .object = state else {
            throw GatewayError.startup("must be {\"initialState\": {...}}")
        }
        do { try ContentStateLimits.check(state) } catch { throw GatewayError.startup("initialState \(error.description)") }
        initialState = state
    }
}
