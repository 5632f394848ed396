/// Figures over time as one self-contained SVG: panels stacked one above the other (a load
/// run's throughput and latency, a replay's pushes and delays), each with its own value axis,
/// sharing one time axis. A panel without series is left out.
///
/// The file has no script and no external reference, so it opens the same in a browser, an
/// image viewer or a Markdown preview. Each value of a series is drawn at the middle of the
/// interval it covers; values that are not finite are skipped.
public struct SVGChart: Sendable {
    /// One panel: a title and the series drawn against one value axis.
    public struct Panel: Sendable, Equatable {
        public var title: String
        public var series: [Series]

        public init(title: String, series: [Series]) {
            (self.title, self.series) = (title, series)
        }

        var endSeconds: Double {
            series.map { Double($0.timeSeries.values.count) * SVGChart.interval($0.timeSeries) }.max() ?? 0
        }
    }

    /// One line of a panel, named in its legend with its unit.
    public struct Series: Sendable, Equatable {
        public var name: String
        public var unit: String
        public var timeSeries: TimeSeries

        public init(name: String, unit: String, timeSeries: TimeSeries) {
            (self.name, self.unit, self.timeSeries) = (name, unit, timeSeries)
        }
    }

    /// How the shared time axis is labelled: seconds for a load run of minutes, minutes for a
    /// replayed match of hours.
    public enum TimeUnit: Sendable {
        case seconds, minutes

        var seconds: Double { self == .seconds ? 1 : 60 }
        var label: String { self == .seconds ? "time (s)" : "time (min)" }
    }

    public var width: Int
    public var height: Int

    /// The default size reads well on a laptop screen and inside a Markdown page.
    public init(width: Int = 900, height: Int = 500) {
        self.width = width
        self.height = height
    }

    /// The SVG document: `title` above `panels` (those with series), `description` as its
    /// accessible title, `empty` in place of the panels when none has a series.
    public func render(title: String, description: String, panels: [Panel], timeUnit: TimeUnit = .seconds, empty: String) -> String {
        let panels = panels.filter { !$0.series.isEmpty }
        let (w, h) = (Double(width), Double(height))
        var body = [
            SVGMarkup.rect(x: 0, y: 0, width: w, height: h, fill: "white"),
            SVGMarkup.text(title, x: w / 2, y: 22, anchor: "middle", size: 16, bold: true),
        ]
        if panels.isEmpty {
            body.append(SVGMarkup.text(empty, x: w / 2, y: h / 2, anchor: "middle"))
        } else {
            let time = ChartScale(covering: (panels.map(\.endSeconds).max() ?? 0) / timeUnit.seconds, ticks: 10)
            let top = Layout.titleHeight
            let panelHeight = (h - top - Layout.timeLabelHeight) / Double(panels.count)
            for (index, panel) in panels.enumerated() {
                let panelTop = top + Double(index) * panelHeight
                body += draw(panel, top: panelTop, bottom: panelTop + panelHeight, time: time, timeUnit: timeUnit)
            }
            body.append(SVGMarkup.text(timeUnit.label, x: (Layout.left + w - Layout.right) / 2, y: h - 8, anchor: "middle"))
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" \
            viewBox="0 0 \(width) \(height)" font-family="sans-serif" font-size="11">
            <title>\(SVGMarkup.escape(description))</title>
            \(body.joined(separator: "\n"))
            </svg>

            """
    }

    private enum Layout {
        static let left = 76.0
        static let right = 24.0
        static let titleHeight = 34.0
        static let timeLabelHeight = 28.0
        static let headerLine = 16.0
        static let tickLabelHeight = 20.0
        static let palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    }

    /// The interval of a series, or one second when it is not a usable length.
    fileprivate static func interval(_ series: TimeSeries) -> Double {
        series.intervalSeconds.isFinite && series.intervalSeconds > 0 ? series.intervalSeconds : 1
    }

    private func draw(_ panel: Panel, top: Double, bottom: Double, time: ChartScale, timeUnit: TimeUnit) -> [String] {
        let (left, right) = (Layout.left, Double(width) - Layout.right)
        var elements = [SVGMarkup.text(panel.title, x: left, y: top + Layout.headerLine, size: 12, bold: true)]
        let legend = legendElements(panel, firstLineStart: left + Double(panel.title.count) * 7 + 20, left: left, right: right, y: top + Layout.headerLine)
        elements += legend.elements
        let plotTop = top + Layout.headerLine + 10 + Double(legend.extraLines) * Layout.headerLine
        let plotBottom = bottom - Layout.tickLabelHeight
        guard plotBottom > plotTop else { return elements }

        let finiteValues = panel.series.flatMap(\.timeSeries.values).filter(\.isFinite)
        let values = ChartScale(covering: finiteValues.max() ?? 0, ticks: 4)
        func x(_ seconds: Double) -> Double { left + time.fraction(seconds / timeUnit.seconds) * (right - left) }
        func y(_ value: Double) -> Double { plotBottom - values.fraction(value) * (plotBottom - plotTop) }

        for tick in values.ticks {
            elements.append(SVGMarkup.line(x1: left, y1: y(tick), x2: right, y2: y(tick), stroke: "#e0e0e0"))
            elements.append(SVGMarkup.text(values.label(tick), x: left - 6, y: y(tick) + 4, anchor: "end"))
        }
        for tick in time.ticks {
            let at = x(tick * timeUnit.seconds)
            elements.append(SVGMarkup.line(x1: at, y1: plotBottom, x2: at, y2: plotBottom + 4, stroke: "#333333"))
            elements.append(SVGMarkup.text(time.label(tick), x: at, y: plotBottom + 15, anchor: "middle"))
        }
        elements.append(SVGMarkup.line(x1: left, y1: plotTop, x2: left, y2: plotBottom, stroke: "#333333"))
        elements.append(SVGMarkup.line(x1: left, y1: plotBottom, x2: right, y2: plotBottom, stroke: "#333333"))

        for (index, series) in panel.series.enumerated() {
            let color = Layout.palette[index % Layout.palette.count]
            let interval = Self.interval(series.timeSeries)
            let points = series.timeSeries.values.enumerated()
                .filter { $0.element.isFinite }
                .map { (x: x((Double($0.offset) + 0.5) * interval), y: y($0.element)) }
            if points.count == 1, let point = points.first {
                elements.append(SVGMarkup.circle(x: point.x, y: point.y, radius: 3, fill: color))
            } else if points.count > 1 {
                elements.append(SVGMarkup.polyline(points, stroke: color))
            }
        }
        return elements
    }

    /// One swatch and label per series, after the panel title, wrapping onto further lines
    /// when they do not fit.
    private func legendElements(_ panel: Panel, firstLineStart: Double, left: Double, right: Double, y: Double)
        -> (elements: [String], extraLines: Int)
    {
        var elements: [String] = []
        var (cursor, line) = (firstLineStart, 0)
        for (index, series) in panel.series.enumerated() {
            let label = series.unit.isEmpty ? series.name : "\(series.name) (\(series.unit))"
            let itemWidth = 22 + Double(label.count) * 6.2 + 16
            if cursor + itemWidth > right && cursor > left {
                (cursor, line) = (left, line + 1)
            }
            let baseline = y + Double(line) * Layout.headerLine
            let color = Layout.palette[index % Layout.palette.count]
            elements.append(SVGMarkup.line(x1: cursor, y1: baseline - 4, x2: cursor + 16, y2: baseline - 4, stroke: color, width: 3))
            elements.append(SVGMarkup.text(label, x: cursor + 22, y: baseline))
            cursor += itemWidth
        }
        return (elements, line)
    }
}
