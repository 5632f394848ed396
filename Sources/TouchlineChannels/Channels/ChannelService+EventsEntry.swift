import TouchlineCore
import TouchlineRuntime

/// What a post of events to a channel came to, by what its sender does next.
package enum EventsOutcome: Sendable {
    /// Stored (2xx): acknowledged, never lost.
    case stored(HTTPResponse)
    /// Refused for what it is (4xx: unknown channel, invalid events, ...): refused again if sent again.
    case refused(HTTPResponse)
    /// Not taken now (5xx: the store, the channel moving): to be sent again later.
    case unavailable(HTTPResponse)

    init(_ response: HTTPResponse) {
        switch response.status {
        case 200..<300: self = .stored(response)
        case 500...: self = .unavailable(response)
        default: self = .refused(response)
        }
    }
}

/// The entry of `POST /v1/channels/{id}/events` without a route: the same validation, the
/// same counting of refusals and the same answers, for the channel named by its id (events
/// published straight to the cluster take it, ``postEvents(to:app:request:)``).
extension ChannelService {
    /// Takes the events of `request` (its body as the route's) for channel `id` of `app`:
    /// `request` is answered once, with what the route would answer. On the ingest loop.
    func postEvents(to id: String, app: String, request: HTTPRequest) {
        do throws(HTTPError) {
            guard !id.contains("/"), let channel = channels[AppChannelID.qualified(id, app: app)] else {
                throw HTTPError(status: 404, code: "channel_not_found", message: "no channel with id '\(id)'")
            }
            take(.events(request, receivedAt: .now), for: channel)
        } catch {
            metrics.rejectedEvents[error.code, default: 0] += 1
            request.respond(error.response)
        }
    }

    /// Events for channel `id` of `app` with `body` (the route's JSON), taken as the route
    /// takes them; `outcome` once, on `loop` (the ingest loop, where this runs).
    package func postEvents(to id: String, app: String, body: [UInt8], loop: EventLoop, outcome: @escaping @Sendable (EventsOutcome) -> Void) {
        let request = HTTPRequest(method: .post, target: "/v1/channels/\(id)/events",
                                  headers: [HTTPHeaderField(name: "Content-Type", value: "application/json")], body: body,
                                  loop: loop) { response in outcome(EventsOutcome(response)) }
        postEvents(to: id, app: app, request: request)
    }
}
