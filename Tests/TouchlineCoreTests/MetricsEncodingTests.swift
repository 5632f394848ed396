import Testing
import TouchlineCore

@Suite struct PrometheusTextEncoderTests {
    @Test func countersAndGaugesGetHelpTypeAndOneLinePerSeries() {
        var received = MetricFamily("touchline_events_received_total", help: "Events accepted.", kind: .counter)
        received.add(3, ["channel": "match-1"])
        received.add(2, ["channel": "match-2"])
        received.add(4, ["channel": "match-1"])
        var depth = MetricFamily("touchline_queue_depth", help: "Waiting items.", kind: .gauge)
        depth.add(0.5, ["queue": "store"])
        #expect(PrometheusTextEncoder.encode([received, depth]) == """
            # HELP touchline_events_received_total Events accepted.
            # TYPE touchline_events_received_total counter
            touchline_events_received_total{channel="match-1"} 7
            touchline_events_received_total{channel="match-2"} 2
            # HELP touchline_queue_depth Waiting items.
            # TYPE touchline_queue_depth gauge
            touchline_queue_depth{queue="store"} 0.5

            """)
    }

    @Test func labelValuesAndHelpAreEscaped() {
        var family = MetricFamily("x_total", help: "a \\ b\nc \"q\"", kind: .counter)
        family.add(1, ["reason": "say \"hi\"\\\n"])
        let text = PrometheusTextEncoder.encode([family])
        #expect(text.contains("# HELP x_total a \\\\ b\\nc \"q\"\n"))
        #expect(text.contains("x_total{reason=\"say \\\"hi\\\"\\\\\\n\"} 1\n"))
    }

    @Test func histogramsWriteCumulativeBucketsSumAndCount() {
        var histogram = Histogram(bounds: [0.01, 0.1, 1])
        for value in [0.005, 0.05, 0.05, 0.5, 7] { histogram.observe(value) }
        var family = MetricFamily("latency_seconds", help: "Latency.", kind: .histogram)
        family.add(histogram, ["pool": "broadcast"])
        #expect(PrometheusTextEncoder.encode([family]) == """
            # HELP latency_seconds Latency.
            # TYPE latency_seconds histogram
            latency_seconds_bucket{pool="broadcast",le="0.01"} 1
            latency_seconds_bucket{pool="broadcast",le="0.1"} 3
            latency_seconds_bucket{pool="broadcast",le="1"} 4
            latency_seconds_bucket{pool="broadcast",le="+Inf"} 5
            latency_seconds_sum{pool="broadcast"} 7.605
            latency_seconds_count{pool="broadcast"} 5

            """)
    }

    @Test func histogramsAddedUnderTheSameLabelsMerge() {
        var first = Histogram()
        first.observe(0.002)
        var second = Histogram()
        second.observe(20)
        var family = MetricFamily("h", help: "h", kind: .histogram)
        family.add(first)
        family.add(second)
        guard case .histogram(let merged)? = family.value() else { Issue.record("no series"); return }
        #expect(merged.count == 2)
        #expect(merged.sum == 20.002)
        #expect(merged.cumulativeCounts.last == 2)
        #expect(merged.bucketCounts[1] == 1)
        #expect(merged.bucketCounts[merged.bounds.count - 1] == 1)
    }

    @Test func specialValuesAreSpelledAsPrometheusReadsThem() {
        #expect(PrometheusTextEncoder.format(.infinity) == "+Inf")
        #expect(PrometheusTextEncoder.format(-.infinity) == "-Inf")
        #expect(PrometheusTextEncoder.format(.nan) == "NaN")
        #expect(PrometheusTextEncoder.format(42) == "42")
        #expect(PrometheusTextEncoder.format(0.0025) == "0.0025")
    }

    @Test func aFamilyWithoutSeriesStillDeclaresItself() {
        let text = PrometheusTextEncoder.encode([MetricFamily("empty_total", help: "Nothing yet.", kind: .counter)])
        #expect(text == "# HELP empty_total Nothing yet.\n# TYPE empty_total counter\n")
    }
}

@Suite struct ChannelLabelCapTests {
    @Test func channelsBeyondTheLimitShareTheOtherLabel() {
        var cap = ChannelLabelCap(limit: 2)
        #expect(cap.label(for: "a") == "a")
        #expect(cap.label(for: "b") == "b")
        #expect(cap.label(for: "c") == ChannelLabelCap.otherLabel)
        #expect(cap.label(for: "a") == "a")
        #expect(cap.labelledCount == 2)
    }

    @Test func admissionIsStickyAndAReleasedSlotGoesToTheNextChannel() {
        var cap = ChannelLabelCap(limit: 1)
        #expect(cap.label(for: "z") == "z")
        #expect(cap.label(for: "a") == "_other")
        #expect(cap.label(for: "z") == "z")
        cap.release("z")
        #expect(cap.label(for: "a") == "a")
        #expect(cap.label(for: "z") == "_other")
    }

    @Test func seriesOfCappedChannelsAreSummedUnderOther() {
        var cap = ChannelLabelCap(limit: 1)
        var family = MetricFamily("touchline_pushes_sent_total", help: "Pushes.", kind: .counter)
        for (channel, pushes) in [("m1", 5), ("m2", 3), ("m3", 4)] { family.add(pushes, ["channel": cap.label(for: channel)]) }
        #expect(family.series.count == 2)
        #expect(family.value(["channel": "m1"]) == .number(5))
        #expect(family.value(["channel": "_other"]) == .number(7))
    }

    @Test func aZeroLimitPutsEveryChannelUnderOther() {
        var cap = ChannelLabelCap(limit: 0)
        #expect(cap.label(for: "a") == "_other")
    }
}
