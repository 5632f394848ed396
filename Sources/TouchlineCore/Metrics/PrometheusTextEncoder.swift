/// Writes metric families in the Prometheus text exposition format, version 0.0.4.
///
/// Each family gets its `# HELP` and `# TYPE` lines, then one line per series; histograms give
/// cumulative `_bucket{le="..."}` lines ending with `le="+Inf"`, then `_sum` and `_count`.
/// Help text escapes `\` and newlines; label values also escape `"`.
public enum PrometheusTextEncoder {
    /// The Content-Type of the output.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public static func encode(_ families: [MetricFamily]) -> String {
        var out = ""
        for family in families {
            out += "# HELP \(family.name) \(escapeHelp(family.help))\n"
            out += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            for series in family.series {
                switch series.value {
                case .number(let value):
                    out += "\(family.name)\(labelText(series.labels.labels)) \(format(value))\n"
                case .histogram(let histogram):
                    let cumulative = histogram.cumulativeCounts
                    for (index, count) in cumulative.enumerated() {
                        let bound = index < histogram.bounds.count ? format(histogram.bounds[index]) : "+Inf"
                        out += "\(family.name)_bucket\(labelText(series.labels.labels + [MetricLabel("le", bound)])) \(count)\n"
                    }
                    out += "\(family.name)_sum\(labelText(series.labels.labels)) \(format(histogram.sum))\n"
                    out += "\(family.name)_count\(labelText(series.labels.labels)) \(histogram.count)\n"
                }
            }
        }
        return out
    }

    /// A sample value: whole numbers without a fraction, `+Inf`, `-Inf`, `NaN` as Prometheus spells them.
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    static func labelText(_ labels: [MetricLabel]) -> String {
        guard !labels.isEmpty else { return "" }
        return "{" + labels.map { "\($0.name)=\"\(escapeLabelValue($0.value))\"" }.joined(separator: ",") + "}"
    }

    static func escapeHelp(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    static func escapeLabelValue(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"": out += "\\\""
            default: out.append(character)
            }
        }
        return out
    }
}
