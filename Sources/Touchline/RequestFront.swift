import TouchlineAccess
import TouchlineRuntime

/// The provider API behind the HTTP server: the admission hook that settles a request from its
/// head alone (``Admission``), then the handler that answers it (in a cluster the owner-or-forward
/// front, else the router).
///
/// The server runs both for every request it reads off a connection; ``handle(method:target:headers:body:answer:)``
/// runs the same two for a request that comes without one, so tests can drive the whole API in
/// process with the answers a client would get. What only a connection has stays with the server
/// and its tests: an unknown method (501), a body over `maxBodyBytes` (413) or the body budget,
/// deadlines, the connection slots, the 503 while shutting down, and streamed answers (the live
/// feed, feed exports), which an in-process request cannot take.
package struct RequestFront: Sendable {
    let loop: EventLoop
    let admission: @Sendable (HTTPRequestHead) -> HTTPAdmission
    let route: @Sendable (HTTPRequest) -> Void

    /// Admits and routes one request on the ingest loop; `answer` receives its response there,
    /// once (never, for a route that answers with a stream).
    package func handle(method: HTTPMethod, target: String, headers: [HTTPHeaderField], body: [UInt8],
                        answer: @escaping @Sendable (HTTPResponse) -> Void) {
        loop.execute { [self] in
            let request = HTTPRequest(method: method, target: target, headers: headers, body: body, loop: loop, answer: answer)
            switch admission(request.head) {
            case .refuse(let refusal): request.respond(refusal.response)
            case .admit: route(request)
            }
        }
    }
}
