import Testing
import Touchline
import TouchlineCore
import TouchlineRuntime

/// The `webhooks` setting: read whole from the file, the environment or a flag, and refused
/// whole with one line naming the field and the source when anything in it is wrong.
@Suite struct WebhookConfigurationTests {
    static let secret = "s3cret-s3cret-s3cret"

    func load(_ webhooks: String) throws(GatewayConfigurationError) -> GatewayConfiguration {
        try GatewayConfiguration.load(arguments: ["--webhooks", webhooks], environment: GatewayConfigurationTests.dev)
    }

    func problem(_ webhooks: String) -> String {
        do { _ = try load(webhooks); return "" } catch { return error.description }
    }

    @Test func aValidSettingIsTakenWhole() throws {
        let configuration = try load("""
            {"endpoints": [{"url": "https://hooks.example.com/t", "secret": "\(Self.secret)", "events": ["channel.ended", "personal.job.finished"]},
                           {"name": "ops", "url": "http://10.0.0.5:8080/", "secret": "\(Self.secret)", "events": ["*"]}],
             "deadLetterAfterSeconds": 3600, "maxConcurrentPerEndpoint": 2}
            """)
        let webhooks = configuration.webhooks
        #expect(webhooks.endpoints.map(\.name) == ["hooks.example.com", "ops"])
        #expect(webhooks.endpoints[0].events == [.channelEnded, .personalJobFinished])
        #expect(webhooks.endpoints[1].events == Set(WebhookEventType.allCases))
        #expect(webhooks.retry.deadAfter == .seconds(3600) && webhooks.maxConcurrentPerEndpoint == 2)
        #expect(webhooks.retention >= webhooks.retry.deadAfter)
    }

    @Test func badInputNamesTheFieldAndNeverTheSecret() {
        let cases: [(String, String)] = [
            (#"{"endpoints": [{"url": "ftp://x/", "secret": "\#(Self.secret)", "events": ["*"]}]}"#,
             "endpoints[0].url must start with http:// or https://"),
            (#"{"endpoints": [{"url": "http://x/", "secret": "\#(Self.secret)", "events": ["channel.endd"]}]}"#,
             "endpoints[0].events[0] 'channel.endd' is not an event type (did you mean 'channel.ended'?)"),
            (#"{"endpoints": [{"url": "http://x/", "secret": "short-secret", "events": ["*"]}]}"#,
             "endpoints[0].secret must be 16 to 1024 bytes, got 12"),
            (#"{"endpoints": [{"url": "http://x/", "secret": "\#(Self.secret)", "events": []}]}"#, "endpoints[0].events must be a non-empty array"),
            (#"{"endpoints": [{"url": "http://x/", "secret": "\#(Self.secret)", "events": ["*"]}, {"url": "http://x/b", "secret": "\#(Self.secret)", "events": ["*"]}]}"#,
             "endpoints[1].name 'x' is used twice"),
            (#"{"endpoints": [{"url": "http://x/", "secret": "\#(Self.secret)", "events": ["*"], "secrt": 1}]}"#, "unknown key 'endpoints[0].secrt'"),
            (#"{"deadLetterAfterSeconds": 7200, "retentionSeconds": 3600}"#, "retentionSeconds (3600) must be at least deadLetterAfterSeconds (7200)"),
            (#"{"endpoints": [\#(Array(repeating: #"{"url": "http://x/", "secret": "s3cret-s3cret-s3cret", "events": ["*"]}"#, count: 17).joined(separator: ","))]}"#,
             "has 17 entries; at most 16"),
        ]
        for (json, expected) in cases {
            let message = problem(json)
            #expect(message.contains("webhook settings") && message.contains(expected) && message.contains("--webhooks"), "\(message)")
            #expect(!message.contains(Self.secret))
        }
    }

    @Test func theFileFormNamesTheFileAndResolvesTheCAFileNextToIt() throws {
        let file = #"{"webhooks": {"caFile": "ca.pem", "endpoints": [{"url": "https://x/", "secret": "\#(Self.secret)", "events": ["*"]}]}}"#
        let configuration = try GatewayConfiguration.load(arguments: ["--config", "/etc/touchline/touchline.json"], environment: GatewayConfigurationTests.dev) { _ in
            Array(file.utf8)
        }
        #expect(configuration.webhooks.caFile == "/etc/touchline/ca.pem")
        do {
            _ = try GatewayConfiguration.load(arguments: ["--config", "/etc/t.json"], environment: GatewayConfigurationTests.dev) { _ in
                Array(#"{"webhooks": {"endpoints": [{"url": "x", "secret": "\#(Self.secret)", "events": ["*"]}]}}"#.utf8)
            }
            Issue.record("a bad URL was taken")
        } catch {
            #expect(error.description.contains("webhooks member endpoints[0].url must start with http:// or https://") && error.description.contains("/etc/t.json"),
                    "\(error)")
        }
    }
}
