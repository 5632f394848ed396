import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// `GET /v1/channels/{id}/events/export`: a recording channel's feed as JSON Lines
/// (``RecordedFeed``), for `touchline replay`.
///
/// The header is taken from the channel on the ingest loop; the events (up to
/// ``FeedRecording/maximumEvents``) are read on a thread of their own with a reader opened
/// there, so a long read never holds the loop, and the answer goes back through
/// ``HTTPRequest/respond(_:)`` (which hands it to the connection's loop). Only committed events
/// are read: the export holds what was acknowledged, in `seq` order, each with its receive time,
/// and the end once the channel has ended.
extension ChannelService {
    func exportFeed(_ call: APICall) throws(HTTPError) {
        let channel = try channel(call)
        guard let recording = channel.recording else {
            throw HTTPError(status: 409, code: "not_recording",
                            message: "channel '\(channel.id)' was not created with \"recordFeed\": true, so its events are not kept")
        }
        let definition = ChannelDefinition(storage: channel.storage, policy: channel.policy, alertMode: channel.alertMode,
                                           attributes: channel.attributes, initialState: recording.initialState)
        let header = RecordedFeed.Header(channelID: channel.id, channel: definition, createdAt: channel.createdAt)
        let request = call.request
        let recordings = recordings
        DedicatedThread.start(name: "touchline-export") {
            let response: HTTPResponse
            do {
                let feed = try Self.readFeed(header, from: recordings)
                response = HTTPResponse(status: 200, headers: [("Content-Type", "application/x-ndjson")], body: feed.jsonLines)
            } catch {
                response = HTTPError(status: 503, code: "store_unavailable", message: "the channel's events could not be read: \(error)",
                                     headers: [("Retry-After", "1")]).response
            }
            request.respond(response)
        }
    }

    /// The recorded feed as the store holds it (blocking; on the exporting thread).
    private static func readFeed(_ header: RecordedFeed.Header, from recordings: any FeedRecordings) throws -> RecordedFeed {
        var entries = try recordings.events(of: header.channelID, createdAt: header.createdAt, limit: FeedRecording.maximumEvents).map { event in
            RecordedFeed.Entry(receivedAt: event.receivedAt, input: .event(try JSONParser.parse(event.body)))
        }
        if let record = try recordings.channel(header.channelID), let end = record.end {
            entries.append(RecordedFeed.Entry(receivedAt: end.endedAt,
                                              input: .end(finalState: try JSONParser.parse(record.contentState), dismissAt: end.dismissAt)))
        }
        return RecordedFeed(header: header, entries: entries)
    }
}
