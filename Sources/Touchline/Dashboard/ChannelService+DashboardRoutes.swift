import TouchlineCore
import TouchlineRuntime

/// The operator dashboard, served by the gateway itself: `GET /` (all channels, queue and
/// connection health) and `GET /channels/{id}` (one channel) are the same page, whose script
/// and style come from `GET /dashboard.js` and `GET /dashboard.css`; no other origin is used,
/// so the dashboard works on a machine without Internet access.
///
/// The page, script and style carry no data and need no key. The data comes from the API: the
/// page asks the operator for an API key, keeps it in `sessionStorage` and sends it as
/// `Authorization: Bearer` on every call, including `GET /v1/stream`, which it reads with
/// `fetch` rather than `EventSource` so the key never has to travel in a URL.
extension ChannelService {
    func addDashboardRoutes(to router: inout HTTPRouter) {
        router.add(.get, "/") { request, _ in request.respond(DashboardAssets.page) }
        router.add(.get, "/channels/{id}") { request, _ in request.respond(DashboardAssets.page) }
        router.add(.get, "/dashboard.js") { request, _ in request.respond(DashboardAssets.script) }
        router.add(.get, "/dashboard.css") { request, _ in request.respond(DashboardAssets.style) }
        router.add(.get, "/v1/stream") { [self] request, _ in
            guarded(request) { () throws(HTTPError) in try openEventStream(request) }
        }
    }

    /// `GET /v1/stream[?channel=<id>]`: Server-Sent Events with snapshots of the channels the
    /// key may see (see ``LiveFeed``).
    private func openEventStream(_ request: HTTPRequest) throws(HTTPError) {
        let key = try access.key(for: request)
        let channelID = request.target.queryValue("channel")
        if let channelID { _ = try access.key(for: request, channelID: channelID) }
        let stream = eventStream ?? LiveFeed(service: self)
        eventStream = stream
        try stream.connect(request, key: key, channelID: channelID)
    }
}

/// The dashboard's files as responses, built once.
enum DashboardAssets {
    /// The page may load only its own script and style and talk only to its own origin; it
    /// cannot be framed by another site.
    private static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy",
         "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-cache"),
    ]

    /// `Dashboard/dashboard.html`, `.js` and `.css`, embedded at build time.
    static let page = asset(PackageResources.dashboard_html, type: "text/html; charset=utf-8")
    static let script = asset(PackageResources.dashboard_js, type: "text/javascript; charset=utf-8")
    static let style = asset(PackageResources.dashboard_css, type: "text/css; charset=utf-8")

    private static func asset(_ bytes: [UInt8], type: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", type)] + securityHeaders, body: bytes)
    }
}
