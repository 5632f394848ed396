import TouchlineAccess
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// `GET /v1/channels/{id}/events/export`: a recording channel's feed as JSON Lines
/// (``RecordedFeed``), for `touchline replay`.
///
/// The header is taken from the channel on the ingest loop; the export is admitted by the
/// export pool (``FeedExports``: a bounded number at once, in the gateway and per key), then
/// runs on a thread of its own, so a long read never holds the loop. That thread reads the
/// recording a page at a time (``RecordedEventPages``) and writes each page's lines as one
/// piece of a streamed answer (``FeedExportOutput``), waiting for the client to take it before
/// reading on: memory holds a page, not the feed. Only committed events are read: the export
/// holds what was acknowledged, in `seq` order, each with its receive time (up to
/// ``FeedRecording/maximumEvents``), and the end once the channel has ended. The bytes are the
/// same as ``RecordedFeed/jsonLines`` of the whole feed.
extension ChannelService {
    /// Events read and written as one piece.
    static let exportPageEvents = 1_000

    func exportFeed(_ call: APICall) throws(HTTPError) {
        let channel = try channel(call)
        guard let recording = channel.recording else {
            throw HTTPError(status: 409, code: "not_recording",
                            message: "channel '\(channel.id)' was not created with \"recordFeed\": true, so its events are not kept")
        }
        let definition = ChannelDefinition(storage: channel.storage, policy: channel.policy, alertMode: channel.alertMode,
                                           attributes: channel.attributes, initialState: recording.initialState)
        let header = RecordedFeed.Header(channelID: channel.id, channel: definition, createdAt: channel.createdAt)
        let exports = exports
        let label = try exports.admit(try call.caller.requiredKey())
        let output = FeedExportOutput(request: call.request) { outcome, events, bytes in
            exports.finish(label, outcome: outcome.rawValue)
            exports.eventsWritten += events
            exports.bytesWritten += bytes
        }
        let recordings = recordings
        DedicatedThread.start(name: "touchline-export") {
            let (result, events) = Self.writeFeed(header, from: recordings, to: output)
            output.end(result, events: events)
        }
    }

    /// Writes the feed page by page (blocking; on the export thread); the events written. Stops
    /// early, with success, when the client is gone.
    private static func writeFeed(_ header: RecordedFeed.Header, from recordings: any FeedRecordings,
                                  to output: FeedExportOutput) -> (Result<Void, HTTPError>, Int) {
        var written = 0
        do {
            let pages = try recordings.pages(of: header.channelID, createdAt: header.createdAt)
            defer { pages.close() }
            var piece = RecordedFeed.line(RecordedFeed.headerJSON(header))
            while written < FeedRecording.maximumEvents,
                  case let page = try pages.next(limit: min(exportPageEvents, FeedRecording.maximumEvents - written)), !page.isEmpty {
                for event in page {
                    piece += RecordedFeed.line(RecordedFeed.json(RecordedFeed.Entry(receivedAt: event.receivedAt,
                                                                                    input: .event(try JSONParser.parse(event.body)))))
                }
                written += page.count
                guard output.write(piece) else { return (.success(()), written) }
                piece = []
            }
            if let record = try recordings.channel(header.channelID), let end = record.end {
                let input = RecordedFeed.Input.end(finalState: try JSONParser.parse(record.contentState), dismissAt: end.dismissAt)
                piece += RecordedFeed.line(RecordedFeed.json(RecordedFeed.Entry(receivedAt: end.endedAt, input: input)))
            }
            if !piece.isEmpty { _ = output.write(piece) }
            return (.success(()), written)
        } catch {
            return (.failure(HTTPError(status: 503, code: "store_unavailable", message: "the channel's events could not be read: \(error)",
                                       headers: [("Retry-After", "1")])), written)
        }
    }
}
