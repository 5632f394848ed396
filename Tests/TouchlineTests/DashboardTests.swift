import ChildProcesses
import Foundation
import Testing
import TestSlots
@testable import Touchline
import TouchlineCore
@testable import TouchlineOperators
import TouchlineTesting

/// The operator dashboard: its page and files, the live stream it reads, and the page itself in
/// a real headless Chromium against a real gateway (bundled mock APNs). The page and its files
/// are checked in process on the in-memory backends; the stream and the browser live.
@Suite("Dashboard", .gatewaysInProcess)
struct DashboardTests {
    /// The repository root, found from this file's place in `Tests/TouchlineTests/`.
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private func createMatch(_ id: String, on fixture: GatewayFixture) throws {
        let body = #"{"id": "\#(id)", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#
        let created = try fixture.admin.request("POST", "/v1/channels", json: body)
        #expect(created.status == 201, "\(created.text)")
    }

    private func post(_ events: String, to id: String, on fixture: GatewayFixture) throws {
        let posted = try fixture.admin.request("POST", "/v1/channels/\(id)/events", json: events)
        #expect(posted.status == 202, "\(posted.text)")
    }

    @Test func thePageAndItsFilesAreServedWithoutAKeyAndWithAStrictPolicy() async throws {
        let fixture = try GatewayFixture(tier: .inProcess)
        let visitor = fixture.client(key: nil)
        let anonymous = try visitor.request("GET", "/")
        #expect(anonymous.status == 200)
        #expect(anonymous.header("Content-Type") == "text/html; charset=utf-8")
        #expect(anonymous.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
        #expect(anonymous.text.contains(#"<script src="/dashboard.js" defer></script>"#))
        let channelPage = try visitor.request("GET", "/channels/club-anything")
        #expect(channelPage.text == anonymous.text)
        let script = try visitor.request("GET", "/dashboard.js")
        #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(script.text.contains("/v1/stream"))
        let style = try visitor.request("GET", "/dashboard.css")
        #expect(style.header("Content-Type") == "text/css; charset=utf-8")
        // Nothing is loaded from another origin.
        for text in [anonymous.text, script.text, style.text] {
            let withoutNamespace = text.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "")
            #expect(!withoutNamespace.contains("http://") && !withoutNamespace.contains("https://") && !withoutNamespace.contains("src=\"//"))
        }
        // What is served is the repository's files, byte for byte, embedded at build time.
        for (served, file) in [(anonymous.text, "dashboard.html"), (script.text, "dashboard.js"), (style.text, "dashboard.css")] {
            let source = try String(contentsOfFile: Self.root.appendingPathComponent("Sources/TouchlineOperators/Dashboard/" + file).path, encoding: .utf8)
            #expect(served == source, "\(file) differs from what the gateway serves")
        }
        await fixture.shutDown()
    }

    /// The script is real JavaScript: Node's syntax check (Debian package nodejs; make deps installs it).
    @Test(.heavy, .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/node"), "node is not installed"))
    func theScriptPassesNodesSyntaxCheck() throws {
        let (termination, text) = try ChildProcess.run("/usr/bin/node", ["--check", Self.root.appendingPathComponent("Sources/TouchlineOperators/Dashboard/dashboard.js").path])
        #expect(termination == .exited(0), "node --check: \(text)")
    }

    @Test(.heavy) func theStreamSendsSnapshotsOfTheChannelsTheKeyMaySeeAndFollowsChanges() async throws {
        let fixture = try GatewayFixture()
        try createMatch("club-live", on: fixture)
        try createMatch("other-1", on: fixture)
        try post(#"{"seq": 1, "type": "status", "status": "live"}"#, to: "club-live", on: fixture)

        let club = try EventStreamClient(port: fixture.port, path: "/v1/stream", key: GatewayFixture.clubKey)
        #expect(club.head.status == 200)
        #expect(club.head.headers["content-type"] == "text/event-stream")
        let first = try await club.nextSnapshot()
        let ids = first[member: "channels"].flatMap { if case .array(let items) = $0 { items.compactMap { $0.string("id") } } else { nil } }
        #expect(ids == ["club-live"], "a provider key sees only its prefix")
        #expect(first[member: "channel"] == nil)
        // The global figures are those of GET /v1/stats for the same key.
        #expect(first[member: "stats"]?[member: "channels"]?.integer("total") == 1)
        #expect(first[member: "stats"]?[member: "connections"] != nil)
        if case .array(let rows)? = first[member: "channels"], let row = rows.first {
            #expect(row[member: "attributes"]?.string("homeCode") == "ARS")
            #expect(row[member: "recentPushes"] == nil, "the table's rows leave the push history out")
        }

        let detail = try EventStreamClient(port: fixture.port, path: "/v1/stream?channel=club-live", key: GatewayFixture.adminKey)
        #expect(try await detail.nextSnapshot()[member: "channel"]?[member: "contentState"]?.integer("homeScore") == 0)

        try post(#"{"seq": 2, "type": "goal", "team": "home", "player": "Saka", "minute": 31}"#, to: "club-live", on: fixture)
        let deadline = ContinuousClock.now + .seconds(30)
        var score: Int64?
        while score != 1 && ContinuousClock.now < deadline {
            score = try await detail.nextSnapshot()[member: "channel"]?[member: "contentState"]?.integer("homeScore")
        }
        #expect(score == 1)
        var acceptedPush = false
        let historyDeadline = ContinuousClock.now + .seconds(30)
        while !acceptedPush && ContinuousClock.now < historyDeadline {
            if case .array(let pushes)? = try await detail.nextSnapshot()[member: "channel"]?[member: "recentPushes"] {
                acceptedPush = pushes.contains { $0.string("outcome") == "accepted" }
            }
        }
        #expect(acceptedPush, "the goal's push shows as accepted in the detail's history")
        // Snapshots keep coming without changes (ages and rates move with time).
        _ = try await club.nextSnapshot()
        _ = try await club.nextSnapshot()
        await fixture.shutDown()
    }

    @Test(.heavy) func theStreamRefusesMissingKeysForeignChannelsAndTooManyClients() async throws {
        let fixture = try GatewayFixture()
        let anonymous = try EventStreamClient.get(port: fixture.port, path: "/v1/stream", key: nil)
        #expect(anonymous.status == 401 && anonymous.text.contains("missing_api_key"))
        let foreign = try EventStreamClient.get(port: fixture.port, path: "/v1/stream?channel=other-1", key: GatewayFixture.clubKey)
        #expect(foreign.status == 403 && foreign.text.contains("forbidden"))

        var open: [EventStreamClient] = []
        for _ in 0..<40 {
            let client = try EventStreamClient(port: fixture.port, path: "/v1/stream", key: GatewayFixture.adminKey)
            if client.head.status != 200 {
                #expect(client.head.status == 503 && client.head.text.contains("too_many_streams"))
                #expect(client.head.headers["retry-after"] == "5")
                break
            }
            open.append(client)
        }
        #expect(open.count == 32)
        open.removeAll()  // closes their sockets: the gateway notices and frees the slots
        try await eventually("a stream slot to be free again", timeout: .seconds(10)) {
            (try? EventStreamClient(port: fixture.port, path: "/v1/stream", key: GatewayFixture.adminKey).head.status) == 200
        }
        await fixture.shutDown()
    }

    /// A provider key cannot take the streams operators need: it holds at most four, and admin
    /// keys always find a stream free.
    @Test(.heavy) func aProviderKeyCannotLockOperatorsOut() async throws {
        let fixture = try GatewayFixture()
        defer { Task { await fixture.shutDown() } }
        var provider: [EventStreamClient] = []
        for _ in 0..<6 {
            let client = try EventStreamClient(port: fixture.port, path: "/v1/stream", key: GatewayFixture.clubKey)
            guard client.head.status == 200 else {
                #expect(client.head.status == 503 && client.head.text.contains("this API key already has 4 live streams"), "\(client.head.text)")
                break
            }
            provider.append(client)
        }
        #expect(provider.count == LiveFeed.maxPerProviderKey)
        let admin = try EventStreamClient(port: fixture.port, path: "/v1/stream", key: GatewayFixture.adminKey)
        #expect(admin.head.status == 200)
        _ = try await admin.nextSnapshot()
    }

    @Test(.heavy) func shutdownEndsOpenStreamsAtOnce() async throws {
        let fixture = try GatewayFixture()
        let client = try EventStreamClient(port: fixture.port, path: "/v1/stream", key: GatewayFixture.adminKey)
        _ = try await client.nextSnapshot()
        // A long grace period for requests in flight: an open stream must not hold it.
        let started = ContinuousClock.now
        await fixture.gateway.shutdown(requestGracePeriod: .seconds(30))
        #expect(ContinuousClock.now - started < .seconds(30))
        // The stream ended with its last chunk, and the gateway closed the connection.
        #expect(String(decoding: try await client.readToEnd(), as: UTF8.self).hasSuffix("0\r\n\r\n"))
        await fixture.shutDown()
    }

    /// The whole loop in a browser: sign in with a key, watch the table follow the events the
    /// provider posts, open the channel's page, and keep screenshots of both.
    /// Two apps: the overview names another app's channels apart, filters by app (its pools'
    /// tiles too), and a channel of another app opens on its own page.
    @Test(.heavy, .enabled(if: HeadlessChromium.executable != nil, "chromium is not installed (Debian package chromium; make deps installs it)"))
    func theDashboardFiltersChannelsByAppInHeadlessChromium() async throws {
        let league = try MockAPNsFixture()
        let tv = try MockAPNsFixture(identity: GatewayAppsTests.tvIdentity)
        let fixture = try GatewayAppsTests.gateway(league: league, tv: tv)
        defer { Task { await fixture.shutDown(); await league.shutDown(); await tv.shutDown() } }
        for (path, id) in [("/v1/channels", "club-one"), ("/v1/apps/tv/channels", "match-one")] {
            let created = try fixture.admin.request("POST", path, json: #"{"id": "\#(id)", "storagePolicy": "no-storage", "attributes": \#(GatewayFixture.matchAttributes)}"#)
            #expect(created.status == 201, "\(created.text)")
        }
        let browser = try await HeadlessChromium()
        defer { browser.close() }
        let base = "http://127.0.0.1:\(fixture.port)"
        try await browser.navigate(to: base + "/")
        try await browser.waitFor("the sign-in form", "String(!!document.querySelector('#key-input') && !document.querySelector('#sign-in').hidden)") { $0 == "true" }
        _ = try await browser.evaluate("""
            document.querySelector('#key-input').value = '\(GatewayFixture.adminKey)';
            document.querySelector('#key-form').requestSubmit(); 'ok'
            """)
        let rows = "[...document.querySelectorAll('#channels tbody tr')].map((row) => row.dataset.channel + '=' + row.querySelector('a').textContent).join(',')"
        try await browser.waitFor("both apps' channels", rows) { $0 == "club-one=club-one,tv/match-one=tv / match-one" }
        #expect(try await browser.evaluate("String(document.querySelector('#apps').hidden)") == "false")
        #expect(try await browser.evaluate("[...document.querySelectorAll('#app-filter option')].map((option) => option.value).join(',')") == ",default,tv")
        let tiles = "[...document.querySelectorAll('#health .tile')].map((tile) => tile.textContent).join('|')"
        try await browser.waitFor("tv's pool tiles", tiles) { $0.contains("APNs tv broadcast") }
        _ = try await browser.evaluate("""
            const select = document.querySelector('#app-filter'); select.value = 'tv'; select.dispatchEvent(new Event('change')); 'ok'
            """)
        try await browser.waitFor("only tv's channels", rows) { $0 == "tv/match-one=tv / match-one" }
        let filteredTiles = try await browser.waitFor("only tv's pool tiles", tiles) { !$0.contains("APNs broadcast") }
        #expect(filteredTiles.contains("APNs tv broadcast") && !filteredTiles.contains("APNs personal"), "\(filteredTiles)")

        let link = try #require(try await browser.evaluate("document.querySelector('#channels tbody a').getAttribute('href')"))
        #expect(link == "/channels/tv%2Fmatch-one")
        try await browser.navigate(to: base + link)
        try await browser.waitFor("tv's channel page", "document.querySelector('#channel-title').textContent") { $0 == "tv/match-one" }
        #expect(try await browser.evaluate("String(document.querySelector('#channel-missing').hidden)") == "true")
        #expect(try await browser.evaluate("document.querySelector('#activity .code')?.textContent ?? ''") == "ARS")
    }

    @Test(.heavy, .enabled(if: HeadlessChromium.executable != nil, "chromium is not installed (Debian package chromium; make deps installs it)"))
    func theDashboardFollowsPostedEventsInHeadlessChromium() async throws {
        let fixture = try GatewayFixture()
        try createMatch("club-ars-che", on: fixture)
        let nonSports = try fixture.admin.request("POST", "/v1/channels", json: #"{"id": "club-quiz", "storagePolicy": "no-storage", "initialState": {"question": 1}}"#)
        #expect(nonSports.status == 201, "\(nonSports.text)")
        try post(#"{"events": [{"seq": 1, "type": "status", "status": "live"}, {"seq": 2, "type": "period", "period": "1H", "clockSeconds": 0, "clockRunning": true}]}"#,
                 to: "club-ars-che", on: fixture)

        let artifacts = Self.root.appendingPathComponent(".build/dashboard-screenshots")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let browser = try await HeadlessChromium()
        defer { browser.close() }
        let base = "http://127.0.0.1:\(fixture.port)"

        try await browser.navigate(to: base + "/")
        try await browser.waitFor("the sign-in form", "String(!!document.querySelector('#key-input') && !document.querySelector('#sign-in').hidden)") { $0 == "true" }
        // A wrong key brings the form back with the gateway's reason; the right one opens the table.
        for key in ["not-a-key", GatewayFixture.clubKey] {
            _ = try await browser.evaluate("""
                document.querySelector('#key-input').value = '\(key)';
                document.querySelector('#key-form').requestSubmit(); 'ok'
                """)
            if key == "not-a-key" {
                try await browser.waitFor("the refusal", "document.querySelector('#key-error').textContent") { $0.contains("not known") }
                #expect(try await browser.evaluate("String(document.querySelector('#sign-in').hidden)") == "false")
            }
        }
        let scoreCell = "document.querySelector('tr[data-channel=\"club-ars-che\"] .score')?.textContent ?? ''"
        try await browser.waitFor("the match row", scoreCell) { $0 == "0 – 0" }
        #expect(try await browser.evaluate("document.querySelector('#connection').textContent") == "live")
        // The bundled mock, in the header: these pushes reach no phone.
        #expect(try await browser.evaluate("document.querySelector('#apns-mode').textContent") == "APNs: mock (development mode)")
        #expect(try await browser.evaluate("String(document.querySelector('#apns-mode').hidden)") == "false")
        #expect(try await browser.evaluate("document.querySelector('tr[data-channel=\"club-quiz\"] .summary').textContent") == #"{"question":1}"#)
        try await browser.waitFor("the broadcast pool's tile", "[...document.querySelectorAll('#health .tile')].map((tile) => tile.textContent).join('|')") {
            $0.contains("APNs broadcastready")
        }

        try post(#"{"seq": 3, "type": "goal", "team": "home", "player": "Saka", "minute": 31}"#, to: "club-ars-che", on: fixture)
        try await browser.waitFor("the goal in the table", scoreCell) { $0 == "1 – 0" }
        // A live match whose feed falls silent gets its badge.
        let stalling = try fixture.admin.request("POST", "/v1/channels", json: #"{"id": "club-stall", "storagePolicy": "no-storage", "policy": {"feedStallSeconds": 0.3}, "attributes": \#(GatewayFixture.matchAttributes)}"#)
        #expect(stalling.status == 201, "\(stalling.text)")
        try post(#"{"seq": 1, "type": "status", "status": "live"}"#, to: "club-stall", on: fixture)
        try await browser.waitFor("the stalled feed's badge", "document.querySelector('tr[data-channel=\"club-stall\"] .feed-stalled')?.textContent ?? ''") {
            $0 == "feed stalled"
        }
        #expect(try await browser.evaluate("String(document.querySelectorAll('.feed-stalled').length)") == "1")
        try await browser.waitFor("the push to show in the priority mix",
                            "document.querySelector('tr[data-channel=\"club-ars-che\"] td.mix').textContent.trim()") { $0 != "0 / 0" }
        let overview = artifacts.appendingPathComponent("dashboard-overview.png")
        try await browser.screenshot().write(to: overview)

        try await browser.navigate(to: base + "/channels/club-ars-che")
        try await browser.waitFor("the activity card", "document.querySelector('#activity .score')?.textContent ?? ''") { $0 == "1 – 0" }
        #expect(try await browser.evaluate("document.querySelector('#apns-mode').dataset.mode") == "mock", "the header on a channel's page too")
        #expect(try await browser.evaluate("document.querySelector('#activity .code').textContent") == "ARS")
        try post(#"{"seq": 4, "type": "goal", "team": "away", "player": "Palmer", "minute": 52}"#, to: "club-ars-che", on: fixture)
        try await browser.waitFor("the equaliser on the card", "document.querySelector('#activity .score')?.textContent ?? ''") { $0 == "1 – 1" }
        try await browser.waitFor("the incident line", "document.querySelector('#activity .incident').textContent") { $0.contains("Palmer") }
        try await browser.waitFor("an accepted push in the history", "String(document.querySelectorAll('#history tbody tr[data-outcome=\"accepted\"]').length)") { $0 != "0" }
        try await browser.waitFor("bars in the rate chart", "String(document.querySelectorAll('#rate-chart rect').length)") { $0 == "30" }
        let channelPage = artifacts.appendingPathComponent("dashboard-channel.png")
        try await browser.screenshot().write(to: channelPage)

        try await browser.navigate(to: base + "/channels/club-nothing-here")
        try await browser.waitFor("the missing channel notice", "String(document.querySelector('#channel-missing').hidden)") { $0 == "false" }
        for file in [overview, channelPage] {
            let png = try Data(contentsOf: file)
            #expect(png.count > 10_000 && png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(file.path) is not a real screenshot")
        }
        print("dashboard screenshots: \(overview.path), \(channelPage.path)")
        await fixture.shutDown()
    }
}

/// An HTTP/1.1 client for `GET /v1/stream`: reads the head, then one Server-Sent Events message
/// at a time (each arrives as one chunk of the chunked body), the blocking reads on a thread of
/// their own. Used by one test task at a time (`@unchecked Sendable` for those reads).
final class EventStreamClient: @unchecked Sendable {
    struct Head {
        var status: Int
        /// Names lowercased.
        var headers: [String: String]
        /// The body of a plain (not streamed) answer.
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []
    private(set) var head = Head(status: 0, headers: [:], body: [])

    init(port: Int, path: String, key: String?) throws {
        fd = try LoopbackSocket.connect(port: port)
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        if let key { request += "Authorization: Bearer \(key)\r\n" }
        let bytes = Array((request + "\r\n").utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        head = try readHead()
    }

    deinit { close(fd) }

    /// One plain request and its answer on a connection of its own.
    static func get(port: Int, path: String, key: String?) throws -> Head {
        try EventStreamClient(port: port, path: path, key: key).head
    }

    /// The JSON of the next `snapshot` event.
    func nextSnapshot() async throws -> JSONValue {
        try await offThePool { try self.readSnapshot() }
    }

    /// What is left of the stream until the gateway closes the connection (or the read times out).
    func readToEnd() async throws -> [UInt8] {
        try await offThePool { self.readRest() }
    }

    private func readSnapshot() throws -> JSONValue {
        let marker = Array("event: snapshot\ndata: ".utf8)
        while true {
            if let start = buffer.firstRange(of: marker), let end = buffer[start.upperBound...].firstRange(of: Array("\n\n".utf8)) {
                let data = Array(buffer[start.upperBound..<end.lowerBound])
                buffer.removeFirst(end.upperBound)
                return try JSONParser.parse(data)
            }
            try fill()
        }
    }

    private func readRest() -> [UInt8] {
        while true {
            do { try fill() } catch { return buffer }
        }
    }

    private func readHead() throws -> Head {
        let separator = Array("\r\n\r\n".utf8)
        while buffer.firstRange(of: separator) == nil { try fill() }
        let split = buffer.firstRange(of: separator)!
        var lines = String(decoding: buffer[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        buffer.removeFirst(split.upperBound)
        let status = Int(lines.removeFirst().split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "") ?? 0
        while buffer.count < length { try fill() }
        let body = Array(buffer.prefix(length))
        buffer.removeFirst(min(length, buffer.count))
        return Head(status: status, headers: headers, body: body)
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            throw GatewayTestClient.Failure(description: count == 0 ? "the gateway closed the stream" : "recv: \(String(cString: strerror(errno)))")
        }
        buffer += chunk[..<count]
    }
}
