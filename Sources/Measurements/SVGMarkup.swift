import Foundation

/// The few SVG elements a chart needs, written as strings with every attribute and text escaped.
enum SVGMarkup {
    /// `text` safe inside an XML attribute or element: markup characters become entities and
    /// characters XML 1.0 forbids (most control characters) are dropped.
    static func escape(_ text: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            case "\t", "\n", "\r": result.unicodeScalars.append(scalar)
            default:
                let forbidden = scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF
                if !forbidden { result.unicodeScalars.append(scalar) }
            }
        }
        return result
    }

    static func number(_ value: Double) -> String {
        String(format: "%.1f", value)
    }

    static func text(_ content: String, x: Double, y: Double, anchor: String = "start", size: Int? = nil, bold: Bool = false) -> String {
        var attributes = "x=\"\(number(x))\" y=\"\(number(y))\" text-anchor=\"\(anchor)\""
        if let size { attributes += " font-size=\"\(size)\"" }
        if bold { attributes += " font-weight=\"bold\"" }
        return "<text \(attributes)>\(escape(content))</text>"
    }

    static func line(x1: Double, y1: Double, x2: Double, y2: Double, stroke: String, width: Double = 1) -> String {
        "<line x1=\"\(number(x1))\" y1=\"\(number(y1))\" x2=\"\(number(x2))\" y2=\"\(number(y2))\" "
            + "stroke=\"\(stroke)\" stroke-width=\"\(width)\"/>"
    }

    static func polyline(_ points: [(x: Double, y: Double)], stroke: String) -> String {
        let list = points.map { "\(number($0.x)),\(number($0.y))" }.joined(separator: " ")
        return "<polyline points=\"\(list)\" fill=\"none\" stroke=\"\(stroke)\" stroke-width=\"1.5\" stroke-linejoin=\"round\"/>"
    }

    static func circle(x: Double, y: Double, radius: Double, fill: String) -> String {
        "<circle cx=\"\(number(x))\" cy=\"\(number(y))\" r=\"\(number(radius))\" fill=\"\(fill)\"/>"
    }

    static func rect(x: Double, y: Double, width: Double, height: Double, fill: String) -> String {
        "<rect x=\"\(number(x))\" y=\"\(number(y))\" width=\"\(number(width))\" height=\"\(number(height))\" fill=\"\(fill)\"/>"
    }
}
