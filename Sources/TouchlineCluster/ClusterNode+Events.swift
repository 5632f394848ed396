import NATS
import TouchlineChannels
import TouchlineCore
import TouchlineJetStream
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

/// `GET /v1/events` on a cluster. The events live in many outboxes: each partition's (in its
/// log, read by the gateway serving it) and each gateway's personal file. The gateway asked
/// reads its own share, asks every other live gateway for theirs over NATS request-reply (each
/// answers on `<prefix>.member.<instance>.events`, with the events after the cursor's position
/// in each outbox it holds), and merges them by creation time into one page
/// (``ClusterCursor``). A gateway that does not answer makes the page 503, never a page
/// with its events skipped; a partition moving meanwhile is simply not read this time, and its
/// events come in a later page (the cursor stays where it was for it).
extension ClusterNode {
    /// How long the gateway asked waits for the others' shares.
    static let eventsTimeout: Duration = .seconds(5)

    func eventsSubject(_ instance: InstanceID) -> String { memberSubject(instance) + ".events" }

    /// A listing to gather from every gateway, checked here as its route would check it (the
    /// caller's key, `limit`, `after` as a ``ClusterCursor``, answered `badCursor` otherwise) and
    /// with the cluster reachable; nil once the request is answered (refused, or not such a route).
    func checkedGathering(_ request: HTTPRequest, of what: String, badCursor: String) -> (limit: Int, cursor: ClusterCursor)? {
        guard let router else { return nil }
        do throws(HTTPError) {
            guard case .found(let route, let parameters) = router.resolve(method: request.method, path: request.path) else {
                router.handle(request)
                return nil
            }
            _ = try router.authorize(request, for: route, parameters: parameters)
            let limit = try WebhookEventsAPI.limit(of: request)
            guard let cursor = request.target.queryValue("after").map(ClusterCursor.init) ?? .start else {
                throw HTTPError(status: 400, code: badCursor, message: "query 'after' must be a 'next' value from an earlier answer")
            }
            guard isConnected, requests != nil else {
                throw HTTPError(status: 503, code: "cluster_unavailable",
                                message: "this gateway has lost its NATS cluster, so it cannot gather the other gateways' \(what); retry shortly",
                                headers: [("Retry-After", "1")])
            }
            return (limit, cursor)
        } catch {
            request.respond(error.response)
            return nil
        }
    }

    /// The whole request (on the ingest loop): checked as its route checks it, then gathered.
    func listEventsEverywhere(_ request: HTTPRequest) {
        guard let (limit, cursor) = checkedGathering(request, of: "events", badCursor: "invalid_cursor") else { return }
        let others = liveMembers.filter { $0 != settings.instance }
        let gathering = EventsGathering(request: request, cursor: cursor, limit: limit, waiting: others.count + 1)
        localShare(after: cursor, limit: limit) { [ingestLoop] result in
            ingestLoop.execute {
                gathering.take(result.mapError { HTTPError(status: 500, code: "store_failed", message: "reading webhook events failed: \($0)") })
            }
        }
        let asked = EventsShare.ask(cursor: cursor, limit: limit)
        for member in others {
            requests?.request(asked, to: eventsSubject(member), timeout: Self.eventsTimeout) { result in
                gathering.take(Self.share(from: result, of: member))
            }
        }
    }

    /// Another gateway's request for this gateway's share (on the ingest loop).
    func serveEvents(_ message: NATSMessage) {
        guard let reply = message.reply else { return }
        let connection = connection
        guard let (cursor, limit) = EventsShare.asked(message.payload) else {
            try? connection.publish(EventsShare.refusal("unreadable events request"), to: reply)
            return
        }
        localShare(after: cursor, limit: limit) { result in
            let answer = switch result {
            case .success(let pages): EventsShare.encode(pages)
            case .failure(let error): EventsShare.refusal("reading webhook events failed: \(error)")
            }
            try? connection.publish(answer, to: reply)
        }
    }

    /// This gateway's share: the events after the cursor of each partition it serves, and of its
    /// own personal file; read on the webhook loop, `done` called there.
    private func localShare(after cursor: ClusterCursor, limit: Int,
                            _ done: @escaping @Sendable (Result<[String: [StoredWebhookEvent]], StoreError>) -> Void) {
        guard let webhooks = service?.webhooks else { return done(.success([:])) }
        let instance = settings.instance
        webhooks.read({ readers throws(StoreError) in
            guard let channels = readers.first as? ServedOutboxReader, let personal = readers.last, readers.count == 2 else {
                throw .refused("a cluster gateway's outboxes are its partitions' and its personal file's")
            }
            var pages: [String: [StoredWebhookEvent]] = [:]
            for (partition, page) in try channels.eventsByPartition(after: { cursor[ClusterCursor.partition($0)] }, limit: limit) {
                pages[ClusterCursor.partition(partition)] = page
            }
            let key = ClusterCursor.member(instance)
            pages[key] = try personal.events(after: cursor[key], limit: limit)
            return pages
        }, done)
    }

    private static func share(from result: Result<NATSMessage, NATSRequests.Failure>, of member: InstanceID) -> Result<[String: [StoredWebhookEvent]], HTTPError> {
        switch result {
        case .success(let message):
            guard let pages = EventsShare.decode(message.payload) else {
                return .failure(HTTPError(status: 502, code: "events_incomplete", message: "gateway \(member) answered the events request with something other than its events"))
            }
            return .success(pages)
        case .failure(let error):
            return .failure(HTTPError(status: 503, code: "events_incomplete",
                                      message: "gateway \(member) did not answer the events request (\(error)), so its events would be missing; retry",
                                      headers: [("Retry-After", "1")]))
        }
    }
}

/// The shares gathered for one page; answers the request once all are in. Confined to the
/// ingest loop (`@unchecked Sendable` only so the loop's callbacks can capture it).
private final class EventsGathering: @unchecked Sendable {
    private let request: HTTPRequest
    private let cursor: ClusterCursor
    private let limit: Int
    private var waiting: Int
    private var pages: [String: [StoredWebhookEvent]] = [:]
    private var failure: HTTPError?

    init(request: HTTPRequest, cursor: ClusterCursor, limit: Int, waiting: Int) {
        self.request = request
        self.cursor = cursor
        self.limit = limit
        self.waiting = waiting
    }

    func take(_ share: Result<[String: [StoredWebhookEvent]], HTTPError>) {
        waiting -= 1
        switch share {
        case .success(let shared):
            // A partition moving while the shares were read may come from two gateways: one is kept.
            for (key, page) in shared where pages[key] == nil { pages[key] = page }
        case .failure(let error):
            failure = failure ?? error
        }
        guard waiting == 0 else { return }
        if let failure {
            request.respond(failure.response)
        } else {
            let (events, next) = cursor.merging(pages, limit: limit)
            request.respond(WebhookEventsAPI.page(events, next: next.text))
        }
    }
}

/// The messages of the events request between gateways: the ask (cursor and limit) and the
/// share (each outbox's events, their bodies byte for byte as stored).
enum EventsShare {
    static func ask(cursor: ClusterCursor, limit: Int) -> [UInt8] {
        JSONValue.object([.init("after", .string(cursor.text)), .init("limit", .integer(Int64(limit)))]).encoded
    }

    static func asked(_ bytes: [UInt8]) -> (ClusterCursor, Int)? {
        guard let ask = try? JSONParser.parse(bytes), case .string(let text)? = ask[member: "after"], let cursor = ClusterCursor(text),
              case .integer(let limit)? = ask[member: "limit"], (1...1_000).contains(limit) else { return nil }
        return (cursor, Int(limit))
    }

    static func encode(_ pages: [String: [StoredWebhookEvent]]) -> [UInt8] {
        JSONValue.object([.init("pages", .object(pages.sorted { $0.key < $1.key }.map { key, events in
            .init(key, .array(events.map { event in
                .object([.init("id", .integer(event.id)), .init("eventId", .string(event.eventID)), .init("type", .string(event.type)),
                         .init("createdAt", .integer(event.createdAt.nanoseconds)), .init("body", .string(String(decoding: event.body, as: UTF8.self)))])
            }))
        }))]).encoded
    }

    static func refusal(_ message: String) -> [UInt8] { JSONValue.object([.init("error", .string(message))]).encoded }

    static func decode(_ bytes: [UInt8]) -> [String: [StoredWebhookEvent]]? {
        guard let share = try? JSONParser.parse(bytes), case .object(let sources)? = share[member: "pages"] else { return nil }
        var pages: [String: [StoredWebhookEvent]] = [:]
        for source in sources {
            guard case .array(let events) = source.value else { return nil }
            var page: [StoredWebhookEvent] = []
            for event in events {
                guard case .integer(let id)? = event[member: "id"], case .string(let eventID)? = event[member: "eventId"],
                      case .string(let type)? = event[member: "type"], case .integer(let created)? = event[member: "createdAt"],
                      case .string(let body)? = event[member: "body"] else { return nil }
                page.append(StoredWebhookEvent(id: id, eventID: eventID, type: type, createdAt: UnixTime(nanoseconds: created), body: Array(body.utf8)))
            }
            pages[source.name] = page
        }
        return pages
    }
}
