import TouchlineAccess
import TouchlineChannels
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
///
/// The live feed reads the channels, so this feature holds the ``ChannelService`` (on the
/// ingest loop, like the feed) and makes the feed on the first `GET /v1/stream`.
package struct DashboardAPI: APIFeature {
    let service: ChannelService
    let operators: OperatorsAPI

    package init(service: ChannelService, operators: OperatorsAPI) {
        self.service = service
        self.operators = operators
    }

    package func addRoutes(to router: inout APIRouter) {
        router.add(.get, "/", scope: .open) { call throws(HTTPError) in call.respond(DashboardAssets.page) }
        router.add(.get, "/channels/{id}", scope: .open) { call throws(HTTPError) in call.respond(DashboardAssets.page) }
        router.add(.get, "/dashboard.js", scope: .open) { call throws(HTTPError) in call.respond(DashboardAssets.script) }
        router.add(.get, "/dashboard.css", scope: .open) { call throws(HTTPError) in call.respond(DashboardAssets.style) }
        router.add(.get, "/v1/stream", scope: .anyKey) { call throws(HTTPError) in try openEventStream(call) }
    }

    /// `GET /v1/stream[?channel=<id>]`: Server-Sent Events with snapshots of the channels the
    /// key may see (see ``LiveFeed``).
    private func openEventStream(_ call: APICall) throws(HTTPError) {
        let request = call.request
        let key = try call.caller.requiredKey()
        let channelID = request.target.queryValue("channel")
        if let channelID { try APIAccess.require(key, covers: channelID) }
        let stream = service.changeWatcher as? LiveFeed ?? LiveFeed(service: service, operators: operators)
        service.changeWatcher = stream
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
