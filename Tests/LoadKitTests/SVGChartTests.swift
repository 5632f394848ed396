import Foundation
import FoundationXML
import LoadKit
@testable import Measurements
import Testing

@Suite struct SVGChartTests {
    typealias Series = ScenarioResult.Series

    @Test func aNormalChartIsXMLWithBothPanelsAndEverySeriesName() throws {
        let svg = SVGChart().render(ReportFixtures.matchday)
        let document = try XMLSummary(svg)
        #expect(document.root == "svg")
        #expect(document.texts.contains("matchday"))
        #expect(document.texts.contains("Throughput (per second)"))
        #expect(document.texts.contains("Latency (ms)"))
        #expect(document.texts.contains("pushes sent (pushes/s)"))
        #expect(document.texts.contains("ingest to APNs p99 (ms)"))
        #expect(document.texts.contains("time (s)"))
        #expect(!svg.contains("gateway CPU"), "resource series stay in the JSON")
        #expect(document.count("polyline") == 2)
        #expect(svg.contains(#"width="900" height="500""#))
    }

    @Test func theChartIsSelfContained() {
        let svg = SVGChart().render(ReportFixtures.matchday)
        #expect(!svg.contains("<script"))
        #expect(!svg.contains("href"))
        #expect(!svg.contains("url("))
    }

    @Test func ticksUseRoundSteps() throws {
        let document = try XMLSummary(SVGChart().render(ReportFixtures.matchday))
        // 4 one-second values reach 4 s; throughput peaks at 135,000/s, latency at 4.9 ms.
        for label in ["0", "0.5", "1.0", "3.5", "4.0", "50k", "100k", "150k", "2", "4", "6"] {
            #expect(document.texts.contains(label), "tick label \(label)")
        }
        #expect(!document.texts.contains("0k") && !document.texts.contains("0.0"))
    }

    @Test func withoutLatencySeriesTheLatencyPanelIsLeftOut() throws {
        let scenario = ReportFixtures.scenario(series: [
            Series(name: "sent", unit: "pushes/s", kind: .throughput, timeSeries: TimeSeries(intervalSeconds: 2, values: [10, 20, 15])),
        ])
        let document = try XMLSummary(SVGChart().render(scenario))
        #expect(document.texts.contains("Throughput (per second)"))
        #expect(!document.texts.contains("Latency (ms)"))
        #expect(document.count("polyline") == 1)
    }

    @Test func aSinglePointIsDrawnAsAMarker() throws {
        let scenario = ReportFixtures.scenario(series: [
            Series(name: "sent", unit: "pushes/s", kind: .throughput, timeSeries: TimeSeries(intervalSeconds: 1, values: [42])),
            Series(name: "p99", unit: "ms", kind: .latency, timeSeries: TimeSeries(intervalSeconds: 1, values: [3.5])),
        ])
        let document = try XMLSummary(SVGChart().render(scenario))
        #expect(document.count("circle") == 2)
        #expect(document.count("polyline") == 0)
        #expect(document.texts.contains("sent (pushes/s)") && document.texts.contains("p99 (ms)"))
    }

    @Test func emptyAndAllZeroSeriesDoNotDivideByZero() throws {
        let scenario = ReportFixtures.scenario(series: [
            Series(name: "nothing", unit: "pushes/s", kind: .throughput, timeSeries: TimeSeries(intervalSeconds: 1, values: [])),
            Series(name: "zeros", unit: "ms", kind: .latency, timeSeries: TimeSeries(intervalSeconds: 0, values: [0, 0, 0])),
            Series(name: "holes", unit: "ms", kind: .latency, timeSeries: TimeSeries(intervalSeconds: 1, values: [.nan, .infinity, 1])),
        ])
        let svg = SVGChart().render(scenario)
        let document = try XMLSummary(svg)
        #expect(document.texts.contains("nothing (pushes/s)") && document.texts.contains("zeros (ms)"))
        #expect(!svg.lowercased().contains("nan") && !svg.contains("inf"))
        #expect(document.count("polyline") == 1)
        #expect(document.count("circle") == 1)
    }

    @Test func aScenarioWithoutSeriesSaysSo() throws {
        let document = try XMLSummary(SVGChart().render(ReportFixtures.ingestBurst))
        #expect(document.texts.contains("No throughput or latency series were recorded."))
        #expect(document.texts.contains("ingest-burst"))
    }

    @Test func namesAreEscaped() throws {
        let name = #"<p99 & "max" 'ms'>"#
        let scenario = ReportFixtures.scenario(name: "a<b & \"c\"", series: [
            Series(name: name, unit: "ms", kind: .latency, timeSeries: TimeSeries(intervalSeconds: 1, values: [1, 2])),
            Series(name: "bell\u{7}", unit: "", kind: .throughput, timeSeries: TimeSeries(intervalSeconds: 1, values: [1, 2])),
        ])
        let svg = SVGChart().render(scenario)
        let document = try XMLSummary(svg)
        #expect(document.texts.contains("\(name) (ms)"))
        #expect(document.texts.contains("a<b & \"c\""))
        #expect(document.texts.contains("bell"))
        #expect(svg.contains("&lt;p99 &amp; &quot;max&quot; &apos;ms&apos;&gt;"))
    }

    @Test func scalesStepRoundlyAndNeverCollapse() {
        func scale(_ value: Double, _ ticks: Int) -> (Double, Double) {
            let scale = ChartScale(covering: value, ticks: ticks)
            return (scale.step, scale.maximum)
        }
        #expect(scale(135_000, 4) == (50_000, 150_000))
        #expect(scale(4.9, 4) == (2, 6))
        #expect(scale(60, 10) == (10, 60))
        #expect(ChartScale(covering: 0, ticks: 4).maximum == 1)
        #expect(ChartScale(covering: .nan, ticks: 4).maximum == 1)
        #expect(ChartScale(covering: 0.3, ticks: 4).ticks.map { ChartScale(covering: 0.3, ticks: 4).label($0) } == ["0", "0.1", "0.2", "0.3"])
        #expect(ChartScale(covering: 12_000_000, ticks: 4).label(5_000_000) == "5M")
        #expect(ChartScale(covering: 2_500, ticks: 4).label(2_000) == "2,000")
    }
}

/// What the tests read back from an SVG: it parsed as XML, its root element, every text node and
/// how many elements of each name it holds.
private struct XMLSummary {
    let root: String
    let texts: [String]
    private let elements: [String: Int]

    init(_ svg: String) throws {
        let delegate = Collector()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = delegate
        guard parser.parse() else {
            throw XMLError(message: parser.parserError.map { "\($0)" } ?? "unknown parse error")
        }
        root = delegate.root ?? ""
        texts = delegate.texts
        elements = delegate.elements
    }

    func count(_ element: String) -> Int { elements[element] ?? 0 }

    struct XMLError: Error { let message: String }

    private final class Collector: NSObject, XMLParserDelegate {
        var root: String?
        var texts: [String] = []
        var elements: [String: Int] = [:]
        private var text = ""

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            root = root ?? name
            elements[name, default: 0] += 1
            text = ""
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            text += string
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "text" { texts.append(text) }
            text = ""
        }
    }
}
