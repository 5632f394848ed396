import Foundation
import LoadKit
import Testing

@Suite struct PrometheusSnapshotTests {
    /// Shaped like the gateway's `GET /metrics` (names, label order, histogram lines).
    static let scrape = #"""
    # HELP touchline_events_received_total Events applied to the channel.
    # TYPE touchline_events_received_total counter
    touchline_events_received_total{channel="match-0001"} 120
    touchline_events_received_total{channel="match-0002"} 118
    touchline_events_received_total{channel="_other"} 35000
    # HELP touchline_pushes_sent_total Broadcast pushes handed to APNs, by apns-priority.
    # TYPE touchline_pushes_sent_total counter
    touchline_pushes_sent_total{channel="match-0001",priority="5"} 40
    touchline_pushes_sent_total{channel="match-0001",priority="10"} 4
    touchline_pushes_sent_total{channel="match-0002",priority="5"} 41
    touchline_pushes_sent_total{channel="match-0002",priority="10"} 2
    # HELP touchline_apns_responses_total Every APNs exchange by pool, status and reason.
    # TYPE touchline_apns_responses_total counter
    touchline_apns_responses_total{pool="broadcast",status="200",reason=""} 87
    touchline_apns_responses_total{pool="broadcast",status="429",reason="TooManyRequests"} 3
    touchline_apns_responses_total{pool="management",status="201",reason=""} 2
    touchline_apns_responses_total{pool="broadcast",status="none",reason="timeout"} 1
    # HELP touchline_priority_budget_remaining Priority-10 pushes the channel may still send.
    # TYPE touchline_priority_budget_remaining gauge
    touchline_priority_budget_remaining{channel="match-0001"} 6
    # HELP touchline_queue_depth Items waiting.\nPer queue.
    # TYPE touchline_queue_depth gauge
    touchline_queue_depth{queue="store"} 0
    # HELP touchline_provider_token_age_seconds Age of the provider token in use.
    # TYPE touchline_provider_token_age_seconds gauge
    touchline_provider_token_age_seconds 12.5
    # HELP touchline_ingest_to_apns_seconds From accepting an event to APNs accepting its push.
    # TYPE touchline_ingest_to_apns_seconds histogram
    touchline_ingest_to_apns_seconds_bucket{priority="5",le="0.001"} 10
    touchline_ingest_to_apns_seconds_bucket{priority="5",le="0.01"} 70
    touchline_ingest_to_apns_seconds_bucket{priority="5",le="0.1"} 80
    touchline_ingest_to_apns_seconds_bucket{priority="5",le="+Inf"} 81
    touchline_ingest_to_apns_seconds_sum{priority="5"} 0.75
    touchline_ingest_to_apns_seconds_count{priority="5"} 81
    touchline_ingest_to_apns_seconds_bucket{priority="10",le="0.001"} 0
    touchline_ingest_to_apns_seconds_bucket{priority="10",le="0.01"} 6
    touchline_ingest_to_apns_seconds_bucket{priority="10",le="0.1"} 6
    touchline_ingest_to_apns_seconds_bucket{priority="10",le="+Inf"} 6
    touchline_ingest_to_apns_seconds_sum{priority="10"} 0.03
    touchline_ingest_to_apns_seconds_count{priority="10"} 6
    """#

    @Test func readsSamplesLabelsAndTypes() throws {
        let snapshot = try PrometheusSnapshot(parsing: Self.scrape)
        #expect(snapshot.samples.count == 26)
        #expect(snapshot.types["touchline_pushes_sent_total"] == "counter")
        #expect(snapshot.types["touchline_ingest_to_apns_seconds"] == "histogram")
        #expect(snapshot.value("touchline_events_received_total", ["channel": "match-0002"]) == 118)
        #expect(snapshot.value("touchline_provider_token_age_seconds") == 12.5)
        #expect(snapshot.value("touchline_apns_responses_total", ["pool": "broadcast", "status": "200", "reason": ""]) == 87)
        // A subset of the labels is not the series.
        #expect(snapshot.value("touchline_apns_responses_total", ["pool": "broadcast", "status": "200"]) == nil)
        #expect(snapshot.value("touchline_no_such_metric") == nil)
    }

    @Test func sumsAndGroupsByALabel() throws {
        let snapshot = try PrometheusSnapshot(parsing: Self.scrape)
        #expect(snapshot.sum("touchline_events_received_total") == 35_238)
        #expect(snapshot.sum("touchline_pushes_sent_total", by: "priority") == ["5": 81, "10": 6])
        #expect(snapshot.sum("touchline_pushes_sent_total", by: "channel", matching: ["priority": "10"]) == ["match-0001": 4, "match-0002": 2])
        #expect(snapshot.sum("touchline_apns_responses_total", by: "status", matching: ["pool": "broadcast"])
            == ["200": 87, "429": 3, "none": 1])
        #expect(snapshot.sum("touchline_apns_responses_total", matching: ["pool": "personal"]) == 0)
    }

    @Test func readsHistogramsAndTheirPercentiles() throws {
        let snapshot = try PrometheusSnapshot(parsing: Self.scrape)
        let all = try #require(snapshot.histogram("touchline_ingest_to_apns_seconds"))
        #expect(all.count == 87 && abs(all.sum - 0.78) < 1e-9)
        #expect(all.buckets.map(\.upperBound) == [0.001, 0.01, 0.1, .infinity])
        #expect(all.buckets.map(\.count) == [10, 76, 86, 87])
        let critical = try #require(snapshot.histogram("touchline_ingest_to_apns_seconds", matching: ["priority": "10"]))
        // All 6 between 1 and 10 ms: the median interpolates to the middle of that bucket.
        #expect(abs(try #require(critical.quantile(0.5)) - 0.0055) < 1e-12)
        // The last observation is beyond 0.1 s: +Inf reports the last finite bound.
        #expect(all.quantile(1) == 0.1)
        #expect(snapshot.histogram("touchline_apns_response_seconds") == nil)
    }

    @Test func theDifferenceOfTwoScrapesIsWhatHappenedBetween() throws {
        let before = try PrometheusSnapshot(parsing: Self.scrape)
        let later = Self.scrape
            .replacingOccurrences(of: #"{channel="match-0001",priority="5"} 40"#, with: #"{channel="match-0001",priority="5"} 95"#)
            .replacingOccurrences(of: #"touchline_priority_budget_remaining{channel="match-0001"} 6"#,
                                  with: #"touchline_priority_budget_remaining{channel="match-0001"} 2"#)
            .replacingOccurrences(of: #"{priority="10",le="+Inf"} 6"#, with: #"{priority="10",le="+Inf"} 9"#)
            .replacingOccurrences(of: #"{channel="match-0002"} 118"#, with: #"{channel="match-0002"} 5"#)
            + "\ntouchline_pushes_sent_total{channel=\"match-0003\",priority=\"5\"} 7\n"
        let phase = try PrometheusSnapshot(parsing: later).since(before)
        #expect(phase.sum("touchline_pushes_sent_total", by: "priority") == ["5": 62, "10": 0])
        #expect(phase.value("touchline_pushes_sent_total", ["channel": "match-0003", "priority": "5"]) == 7)
        // A counter that went down was reset by a restart: all of it is new.
        #expect(phase.value("touchline_events_received_total", ["channel": "match-0002"]) == 5)
        #expect(phase.value("touchline_events_received_total", ["channel": "match-0001"]) == 0)
        // Gauges are read as they are now.
        #expect(phase.value("touchline_priority_budget_remaining", ["channel": "match-0001"]) == 2)
        #expect(phase.value("touchline_provider_token_age_seconds") == 12.5)
        #expect(phase.histogram("touchline_ingest_to_apns_seconds")?.buckets.map(\.count) == [0, 0, 0, 3])
    }

    @Test func unescapesLabelValuesAndReadsSpecialValues() throws {
        let text = #"""
        # a free comment
        weird{path="C:\\dir",quote="say \"hi\"",lines="a\nb",}  +Inf 1767290400000
        negative -2.5e-3
        missing NaN
        colon:name{le="-Inf"} 1
        """#
        let snapshot = try PrometheusSnapshot(parsing: text)
        #expect(snapshot.samples.first?.labels == ["path": #"C:\dir"#, "quote": #"say "hi""#, "lines": "a\nb"])
        #expect(snapshot.value("weird", ["path": #"C:\dir"#, "quote": #"say "hi""#, "lines": "a\nb"]) == .infinity)
        #expect(snapshot.value("negative") == -0.0025)
        #expect(snapshot.value("missing")?.isNaN == true)
        #expect(snapshot.value("colon:name", ["le": "-Inf"]) == 1)
    }

    @Test func badLinesAreErrorsNamingTheLine() {
        for (text, message) in [("good 1\nbad{x=\"1\" 2", "line 2: expected ',' or '}'"),
                                ("m{x=\"open} 1", "line 1: unterminated label value"),
                                ("m one", "line 1: 'one' is not a sample value"),
                                ("m{x=1} 1", "line 1: expected '\"'"),
                                ("m{x=\"\\t\"} 1", "unknown escape"),
                                ("m 1 2 3", "unexpected text after the value"),
                                ("# TYPE m", "a TYPE comment needs")] {
            #expect {
                _ = try PrometheusSnapshot(parsing: text)
            } throws: { error in
                String(describing: error).contains(message)
            }
        }
    }
}
