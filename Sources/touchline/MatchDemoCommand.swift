import APNsMock
import Foundation
import Touchline

/// `touchline demo`: the gateway on its embedded defaults (SQLite in a temporary directory, the
/// bundled mock APNs), fed a short sample match through the provider API, printing each
/// event's answer and the broadcasts APNs received.
///
/// Events are paced a little apart so that the channel's rate limit and priority budget show:
/// some updates go out at once, some are coalesced into the next push.
enum MatchDemoCommand {
    static let channelID = "demo-ars-che"
    static let sampleMatch: [(pause: Double, event: String)] = [
        (0.0, #"{"seq": 1, "type": "status", "status": "live"}"#),
        (0.3, #"{"seq": 2, "type": "period", "period": "1H", "clockSeconds": 0, "clockRunning": true}"#),
        (0.3, #"{"seq": 3, "type": "card", "team": "away", "card": "yellow", "player": "Caicedo", "minute": 20}"#),
        (0.3, #"{"seq": 4, "type": "goal", "team": "home", "player": "Saka", "minute": 31}"#),
        (0.3, #"{"seq": 5, "type": "stats", "homePossession": 58, "homeShots": 7, "awayShots": 3}"#),
        (2.2, #"{"seq": 6, "type": "penalty", "team": "away", "outcome": "scored", "player": "Palmer", "minute": 52}"#),
        (2.2, #"{"seq": 7, "type": "goal", "team": "home", "player": "Saka", "minute": 67}"#),
        (2.2, #"{"seq": 8, "type": "status", "status": "finished"}"#),
    ]

    static func run() async -> Int32 {
        let dataDirectory = NSTemporaryDirectory() + "touchline-demo-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let adminKey = "demo-admin-" + UUID().uuidString
        let gateway = Gateway(configuration: GatewayConfiguration(apnsMode: .mock, listenHost: "127.0.0.1", listenPort: 0, dataDirectory: dataDirectory,
                                                                  apiKeys: [.init(key: adminKey, scope: .admin)]))
        do {
            let port = try gateway.start()
            let api = ProviderAPI(port: port, key: adminKey)
            say("gateway on http://127.0.0.1:\(port)/v1, store in \(dataDirectory), bundled mock APNs (no Apple credentials)")
            try await play(api: api, mock: gateway.bundledMockAPNs)
            await gateway.shutdown()
            return 0
        } catch {
            printError("touchline demo: \(error)")
            await gateway.shutdown()
            return 1
        }
    }

    private static func play(api: ProviderAPI, mock: MockAPNsServer?) async throws {
        let attributes = #"{"homeName": "Arsenal", "homeCode": "ARS", "awayName": "Chelsea", "awayCode": "CHE", "competition": "Premier League", "kickoff": 1767290400}"#
        let created = try await api.post("/channels", #"{"id": "\#(channelID)", "storagePolicy": "no-storage", "attributes": \#(attributes)}"#)
        say("POST /v1/channels -> \(created)")
        var shown = 0
        for (pause, event) in sampleMatch {
            try await Task.sleep(for: .milliseconds(Int(pause * 1000)))
            let answer = try await api.post("/channels/\(channelID)/events", event)
            say("event \(event) -> \(answer)")
            shown = showBroadcasts(mock, after: shown)
        }
        say("waiting for the rate limit to let the last state out…")
        try await Task.sleep(for: .seconds(2.5))
        shown = showBroadcasts(mock, after: shown)
        let ended = try await api.post("/channels/\(channelID)/end", #"{"dismissAt": \#(Int(Date().timeIntervalSince1970) + 600)}"#)
        say("POST /v1/channels/\(channelID)/end -> \(ended)")
        try await Task.sleep(for: .milliseconds(300))
        _ = showBroadcasts(mock, after: shown)
        say("GET /v1/channels/\(channelID) -> \(try await api.get("/channels/\(channelID)"))")
    }

    /// Prints the broadcasts the mock accepted since the `after`-th one; returns the new count.
    private static func showBroadcasts(_ mock: MockAPNsServer?, after shown: Int) -> Int {
        guard let mock else { return shown }
        let broadcasts = mock.recordedRequests().filter { $0.endpoint == .broadcast && $0.status == 200 }
        for request in broadcasts.dropFirst(shown) {
            say("  APNs broadcast, priority \(request.priority.map(String.init) ?? "?"): \(String(decoding: request.body, as: UTF8.self))")
        }
        return broadcasts.count
    }

    private static func say(_ line: String) { print("• " + line) }
}

/// The provider API over HTTP, as a provider would call it.
private struct ProviderAPI {
    let client: PlainHTTPClient
    let key: String

    init(port: Int, key: String) {
        client = PlainHTTPClient(host: "127.0.0.1", port: port)
        self.key = key
    }

    func post(_ path: String, _ body: String) async throws -> String {
        try await call("POST", path, body: Array(body.utf8))
    }

    func get(_ path: String) async throws -> String {
        try await call("GET", path, body: [])
    }

    /// One call on a thread of its own (the client blocks), answered as "STATUS body".
    private func call(_ method: String, _ path: String, body: [UInt8]) async throws -> String {
        let (client, key) = (client, key)
        let response = try await withCheckedThrowingContinuation { (done: CheckedContinuation<PlainHTTPClient.Response, Error>) in
            Thread {
                done.resume(with: Result {
                    try client.request(method, "/v1" + path, headers: [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")],
                                       body: body)
                })
            }.start()
        }
        let text = response.text
        return "\(response.status) " + (text.count > 200 ? text.prefix(200) + "…" : text)
    }
}
