import TouchlineAccess
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// `GET /v1/events?after=CURSOR&limit=N`: the webhook events for providers who prefer to pull.
///
/// The same documents the webhooks POST, from both outboxes as one stream (see
/// ``EventsCursor``): each answer carries `next`, the cursor to pass as `after` for the
/// following page, also when the page is empty, so a poller keeps its place. Events stay for
/// the webhook retention (`webhooks.retentionSeconds`). Admin keys only: the stream covers
/// every channel and every personal job, whatever a prefix key may see.
///
/// Owns only the ingest loop (where answers are made) and the webhook delivery that reads both
/// outboxes; nil in a gateway built without webhooks (503 `events_unavailable`).
package struct WebhookEventsAPI: APIFeature {
    let loop: EventLoop
    let webhooks: WebhookDelivery?

    package init(loop: EventLoop, webhooks: WebhookDelivery?) {
        self.loop = loop
        self.webhooks = webhooks
    }

    package func addRoutes(to router: inout APIRouter) {
        router.add(.get, "/v1/events", scope: .admin(purpose: "webhook events")) { call throws(HTTPError) in
            try listEvents(call.request)
        }
    }

    /// The query's `limit`: 1 to 1000, 100 by default.
    package static func limit(of request: HTTPRequest) throws(HTTPError) -> Int {
        guard let text = request.target.queryValue("limit") else { return 100 }
        guard let value = Int(text), (1...1000).contains(value) else {
            throw HTTPError(status: 400, code: "invalid_query", message: "query 'limit' must be a whole number from 1 to 1000, got \"\(text.prefix(40))\"")
        }
        return value
    }

    /// The answer: the stored documents as they were signed, byte for byte, and the next cursor.
    package static func page(_ events: [StoredWebhookEvent], next: String) -> HTTPResponse {
        var body = Array(#"{"events":["#.utf8)
        for (index, event) in events.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += event.body
        }
        body += Array(#"],"next":"\#(next)"}"#.utf8)
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
    }

    private func listEvents(_ request: HTTPRequest) throws(HTTPError) {
        let limit = try Self.limit(of: request)
        var cursor = EventsCursor.start
        if let text = request.target.queryValue("after") {
            guard let parsed = EventsCursor(text) else {
                throw HTTPError(status: 400, code: "invalid_cursor", message: "query 'after' must be a 'next' value from an earlier answer")
            }
            cursor = parsed
        }
        guard let webhooks else { throw HTTPError(status: 503, code: "events_unavailable", message: "this gateway records no webhook events") }
        let ingest = loop
        webhooks.events(after: cursor, limit: limit) { result in
            ingest.execute {
                switch result {
                case .failure(let error):
                    request.respond(.error(status: 500, error: "store_failed", message: "reading webhook events failed: \(error)"))
                case .success(let page):
                    request.respond(Self.page(page.events, next: page.next.text))
                }
            }
        }
    }
}
