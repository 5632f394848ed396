import ChildProcesses
import APNsMock
import Foundation
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineTesting

/// `/metrics` end to end: events posted through the real gateway, pushes answered by the real
/// mock APNs over TLS, and the series read back from the Prometheus text; the label cap and the
/// key `/metrics` may take in process on the in-memory backends.
@Suite("Gateway metrics", .gatewaysInProcess)
struct GatewayMetricsTests {
    @Test(.heavy) func eventsPushesAndAPNsAnswersShowUpOnMetrics() async throws {
        let gateway = try GatewayFixture()
        let api = gateway.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "m1", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/m1/events", json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)
        #expect(try api.request("POST", "/v1/channels/m1/events", json: #"{"seq": 1, "patch": {"home": 1}}"#).status == 202)
        #expect(try api.request("POST", "/v1/channels/m1/events", json: #"{"seq": 2}"#).status == 422)
        try await eventually("the push to be answered") {
            (try? metricValue(api.request("GET", "/metrics").text, "touchline_ingest_to_apns_seconds_count{priority=\"5\"}")) ?? 0 >= 1
        }
        let response = try api.request("GET", "/metrics", key: .some(nil))
        #expect(response.status == 200)
        #expect(response.head.lowercased().contains("content-type: text/plain; version=0.0.4"))
        let text = response.text
        #expect(metricValue(text, #"touchline_events_received_total{channel="m1"}"#) == 1)
        #expect(metricValue(text, #"touchline_events_duplicate_total{channel="m1"}"#) == 1)
        #expect(metricValue(text, #"touchline_events_rejected_total{reason="invalid_event"}"#) == 1)
        #expect(metricValue(text, #"touchline_state_changes_total{channel="m1"}"#) == 1)
        #expect(metricValue(text, #"touchline_pushes_sent_total{channel="m1",priority="5"}"#) == 1)
        #expect(metricValue(text, #"touchline_pushes_sent_total{channel="m1",priority="10"}"#) == 0)
        #expect(metricValue(text, #"touchline_channels{status="active"}"#) == 1)
        #expect(metricValue(text, #"touchline_apns_responses_total{app="default",pool="broadcast",status="200",reason=""}"#) == 1)
        #expect(metricValue(text, #"touchline_apns_responses_total{app="default",pool="management",status="201",reason=""}"#) == 1)
        #expect(metricValue(text, #"touchline_apns_response_seconds_count{app="default",pool="broadcast"}"#) == 1)
        #expect(metricValue(text, #"touchline_apns_response_seconds_bucket{app="default",pool="broadcast",le="+Inf"}"#) == 1)
        #expect(metricValue(text, #"touchline_ingest_to_apns_seconds_bucket{priority="5",le="30"}"#) == 1)
        #expect(metricValue(text, #"touchline_priority_budget_remaining{channel="m1"}"#) == Double(ChannelPolicy.default.priorityBudgetPerHour))
        #expect(metricValue(text, #"touchline_apns_connections_open{app="default",pool="broadcast"}"#).map { $0 >= 1 } == true)
        #expect(metricValue(text, #"touchline_apns_max_concurrent_streams{app="default",pool="broadcast",connection="0"}"#).map { $0 >= 1 } == true)
        #expect(metricValue(text, #"touchline_queue_depth{queue="store"}"#) != nil)
        #expect(metricValue(text, #"touchline_provider_token_age_seconds{app="default"}"#).map { $0 >= 0 && $0 < 3600 } == true)
        #expect(metricValue(text, #"touchline_personal_jobs{status="running"}"#) == 0)
        #expect(metricValue(text, #"touchline_personal_targets_pending"#) == 0)
        #expect(metricValue(text, #"touchline_tokens_deactivated_total"#) == 0)
        await gateway.shutDown()
    }

    @Test(.heavy) func refusedBroadcastsAndDeadPersonalTokensAreCountedByPoolStatusAndReason() async throws {
        let dead = Set([1, 2].map(GatewayPersonalAPITests.token))
        let apns = try MockAPNsFixture { configuration in
            configuration.faults.rateEndpoints = [.broadcast]
            configuration.faults.tooManyRequestsRate = 1
            configuration.faults.unregisteredTokens = dead
        }
        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        let api = gateway.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "busy", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/busy/events", json: #"{"seq": 1, "patch": {"v": 1}}"#).status == 202)
        for n in 0..<4 {
            #expect(try api.request("POST", "/v1/tokens", json: """
                {"token": "\(GatewayPersonalAPITests.token(n))", "kind": "push-to-start", "userId": "fan-\(n)", "follows": ["team:ARS"]}
                """).status == 201)
        }
        #expect(try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody).status == 202)
        var text = ""
        // The four starts are answered in any order: the two 410s can be counted while a 200 is on its way.
        try await eventually("a throttled broadcast, the dead tokens and every start answered") {
            text = (try? api.request("GET", "/metrics").text) ?? ""
            return metricValue(text, #"touchline_apns_retries_total{app="default",pool="broadcast"}"#) ?? 0 >= 1
                && metricValue(text, #"touchline_dead_letters_total{reason="Unregistered"}"#) == 2
                && metricValue(text, #"touchline_apns_response_seconds_count{app="default",pool="personal"}"#) ?? 0 >= 4
        }
        // The mock dates its listed tokens' 410s from its start, before they were registered: the
        // registry keeps them, so no token was deactivated (see the test of touchline_tokens_deactivated_total below).
        #expect(metricValue(text, "touchline_tokens_deactivated_total") == 0)
        #expect(metricValue(text, #"touchline_apns_responses_total{app="default",pool="broadcast",status="429",reason="TooManyRequests"}"#) ?? 0 >= 1)
        #expect(metricValue(text, #"touchline_apns_responses_total{app="default",pool="broadcast",status="200",reason=""}"#) == nil)
        #expect(metricValue(text, #"touchline_apns_responses_total{app="default",pool="personal",status="410",reason="Unregistered"}"#) == 2)
        #expect(metricValue(text, #"touchline_apns_responses_total{app="default",pool="personal",status="200",reason=""}"#) == 2)
        #expect(metricValue(text, #"touchline_dead_letters_total{reason="Unregistered"}"#) == 2)
        #expect(metricValue(text, #"touchline_apns_response_seconds_count{app="default",pool="personal"}"#) == 4)
        #expect(metricValue(text, #"touchline_ingest_to_apns_seconds_count{priority="5"}"#) == 0, "no broadcast was accepted")
        let stats = try #require(try api.request("GET", "/v1/channels/busy/stats").json)
        #expect((stats[member: "errors"]?.integer("throttled") ?? 0) >= 1)
        if case .array(let pushes)? = stats[member: "recentPushes"] {
            #expect(pushes.first?.string("outcome") == "TooManyRequests")
        }
        await gateway.shutDown()
        await apns.shutDown()
    }

    /// `touchline_tokens_deactivated_total` counts tokens the store deactivated, not 410s: two
    /// tokens listed dead since before they were registered stay active, and a 410 for a token
    /// already deactivated changes nothing. Every 410 is still a dead letter `Unregistered`.
    @Test(.heavy) func tokensDeactivatedCountsTokensTheStoreDeactivatedNotFourTens() async throws {
        let listed = Set([1, 2].map(GatewayPersonalAPITests.token))
        let apns = try MockAPNsFixture { $0.faults.unregisteredTokens = listed }
        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        let api = gateway.admin
        for n in 0..<4 {
            #expect(try api.request("POST", "/v1/tokens", json: """
                {"token": "\(GatewayPersonalAPITests.token(n))", "kind": "push-to-start", "userId": "fan-\(n)", "follows": ["team:ARS"]}
                """).status == 201)
        }
        try await Task.sleep(for: .milliseconds(5))
        let dead = GatewayPersonalAPITests.token(3)
        apns.mock.unregister(token: dead)
        func runJob(_ body: String) async throws {
            let jobID = try #require(try api.request("POST", "/v1/personal", json: body).json?.string("jobId"))
            try await eventually("job \(jobID) to finish") {
                (try? api.request("GET", "/v1/personal/\(jobID)").json?.string("status")) == "done"
            }
        }
        try await runJob(GatewayPersonalAPITests.startBody)
        // A job to the one token now inactive: APNs answers 410 again, nothing is deactivated.
        try await runJob("""
            {"audience": {"token": "\(dead)"}, "event": "update", "contentState": {"homeScore": 1}}
            """)
        var text = ""
        try await eventually("every 410 counted as a dead letter") {
            text = (try? api.request("GET", "/metrics").text) ?? ""
            return metricValue(text, #"touchline_dead_letters_total{reason="Unregistered"}"#) == 4
                && metricValue(text, "touchline_tokens_deactivated_total") == 1
        }
        #expect(metricValue(text, #"touchline_apns_responses_total{app="default",pool="personal",status="410",reason="Unregistered"}"#) == 4)
        for n in 1...3 {
            let record = try api.request("GET", "/v1/tokens?userId=fan-\(n)").json
            guard case .array(let found)? = record?[member: "tokens"], let token = found.first else {
                Issue.record("no token listed for fan-\(n)"); continue
            }
            #expect(token[member: "active"] == .bool(n != 3), "token of fan-\(n)")
        }
        await gateway.shutDown()
        await apns.shutDown()
    }

    /// APNs's clock an hour and a minute ahead: even a fresh token is expired for it, and a new
    /// one may not be signed for 20 minutes. The personal sends are held (not dead-lettered), and
    /// /metrics shows the skew, the hold and the held requests.
    @Test(.heavy) func aProviderTokenRenewalHoldShowsOnMetricsAndDeadLettersNothing() async throws {
        let apns = try MockAPNsFixture { $0.faults.providerTokenClockOffset = .seconds(61 * 60) }
        let gateway = try GatewayFixture(apns: apns.gatewaySettings, directory: apns.directory + "/data")
        let api = gateway.admin
        for n in 0..<3 {
            #expect(try api.request("POST", "/v1/tokens", json: """
                {"token": "\(GatewayPersonalAPITests.token(n))", "kind": "push-to-start", "userId": "fan-\(n)", "follows": ["team:ARS"]}
                """).status == 201)
        }
        let jobID = try #require(try api.request("POST", "/v1/personal", json: GatewayPersonalAPITests.startBody).json?.string("jobId"))
        var text = ""
        try await eventually("the personal sends to be held") {
            text = (try? api.request("GET", "/metrics").text) ?? ""
            return metricValue(text, #"touchline_apns_requests_held{app="default",pool="personal"}"#) == 3
        }
        #expect(metricValue(text, #"touchline_apns_requests_held{app="default",pool="broadcast"}"#) == 0)
        #expect(metricValue(text, #"touchline_provider_token_skew_rejections_total{app="default"}"#).map { $0 >= 1 } == true)
        #expect(metricValue(text, #"touchline_provider_token_renewal_hold_seconds{app="default"}"#).map { $0 > 20 * 60 && $0 <= 21 * 60 } == true)
        // Sends already queued on the connection carried the token before the hold began.
        #expect(metricValue(text, #"touchline_apns_responses_total{app="default",pool="personal",status="403",reason="ExpiredProviderToken"}"#)
                    .map { $0 >= 1 && $0 <= 3 } == true)
        #expect(metricValue(text, #"touchline_dead_letters_total{reason="ExpiredProviderToken"}"#) == nil)
        let job = try api.request("GET", "/v1/personal/\(jobID)").json
        #expect(job?.string("status") != "done")
        await gateway.shutDown()
        await apns.shutDown()
    }

    @Test func channelsBeyondTheLabelCapAreSummedUnderOther() async throws {
        let gateway = try GatewayFixture(tier: .inProcess) { $0.metrics = MetricsSettings(maxChannelLabels: 1) }
        let api = gateway.admin
        for id in ["a", "b", "c"] {
            #expect(try api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#).status == 201)
            #expect(try api.request("POST", "/v1/channels/\(id)/events", json: #"{"seq": 1, "patch": {"v": 1}}"#).status == 202)
            #expect(try api.request("POST", "/v1/channels/\(id)/events", json: #"{"seq": 1, "patch": {"v": 1}}"#).status == 202)
        }
        let text = try api.request("GET", "/metrics").text
        #expect(metricValue(text, #"touchline_events_received_total{channel="a"}"#) == 1)
        #expect(metricValue(text, #"touchline_events_received_total{channel="_other"}"#) == 2)
        #expect(metricValue(text, #"touchline_events_duplicate_total{channel="_other"}"#) == 2)
        #expect(!text.contains(#"channel="b""#))
        #expect(!text.contains(#"channel="c""#))
        await gateway.shutDown()
    }

    @Test func metricsAreOpenByDefaultAndTakeAKeyWhenConfigured() async throws {
        let open = try GatewayFixture(tier: .inProcess)
        #expect(try open.client(key: nil).request("GET", "/metrics").status == 200)
        await open.shutDown()
        let closed = try GatewayFixture(tier: .inProcess) { $0.metrics = MetricsSettings(requireKey: true) }
        #expect(try closed.client(key: nil).request("GET", "/metrics").status == 401)
        #expect(try closed.client(key: GatewayFixture.clubKey).request("GET", "/metrics").status == 200)
        await closed.shutDown()
    }

    @Test(.heavy) func promtoolAcceptsTheOutput() async throws {
        let promtool = try #require(executable("promtool"), "promtool is missing: install the Debian package prometheus (make deps)")
        let gateway = try GatewayFixture(metrics: MetricsSettings(maxChannelLabels: 1))
        let api = gateway.admin
        // Labelled and `_other` channels, a rejection, and answered pushes: every kind of series.
        for id in ["y", "z"] {
            #expect(try api.request("POST", "/v1/channels", json: #"{"id": "\#(id)", "storagePolicy": "no-storage"}"#).status == 201)
            #expect(try api.request("POST", "/v1/channels/\(id)/events", json: #"{"seq": 1, "patch": {"v": 1}}"#).status == 202)
        }
        #expect(try api.request("POST", "/v1/channels/z/events", json: #"{"bad": 1}"#).status == 400)
        try await eventually("an answered push") {
            (try? metricValue(api.request("GET", "/metrics").text, #"touchline_apns_response_seconds_count{app="default",pool="broadcast"}"#)) ?? 0 >= 1
        }
        let text = try api.request("GET", "/metrics").text
        let check = try run(promtool, ["check", "metrics"], input: Array(text.utf8))
        #expect(check.status == 0, "promtool check metrics: \(check.output)")
        await gateway.shutDown()
    }
}

/// The value of the series written exactly as `series` (name and labels), if present.
func metricValue(_ text: String, _ series: String) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.dropFirst(series.count + 1))
    }
    return nil
}

/// The path of `name` on PATH, if installed.
func executable(_ name: String) -> String? {
    let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") + ["/usr/bin", "/usr/sbin"]
    return paths.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// Runs a program to completion with `input` on stdin; returns its status and combined output.
func run(_ path: String, _ arguments: [String], input: [UInt8] = []) throws -> (status: Int32, output: String) {
    let (termination, text) = try ChildProcess.run(path, arguments, input: .bytes(Data(input)))
    return (termination.status, text)
}
