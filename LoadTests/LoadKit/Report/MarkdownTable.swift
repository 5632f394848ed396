import Foundation

/// A GitHub-flavoured Markdown table whose cells cannot break it: pipes are escaped, line
/// breaks become spaces, and short rows are padded.
struct MarkdownTable {
    enum Alignment { case left, right }

    var columns: [(title: String, alignment: Alignment)]
    var rows: [[String]] = []

    init(_ columns: [(String, Alignment)]) {
        self.columns = columns.map { (title: $0.0, alignment: $0.1) }
    }

    mutating func append(_ cells: [String]) {
        rows.append(cells)
    }

    var rendered: String {
        var lines = [line(columns.map(\.title))]
        lines.append("|" + columns.map { $0.alignment == .right ? "--:|" : "---|" }.joined())
        lines += rows.map(line)
        return lines.joined(separator: "\n")
    }

    private func line(_ cells: [String]) -> String {
        let padded = cells + Array(repeating: "", count: max(0, columns.count - cells.count))
        return "| " + padded.map { Markdown.inline($0).replacingOccurrences(of: "|", with: "\\|") }
            .joined(separator: " | ") + " |"
    }
}

/// Text from a report placed in Markdown: one line, and no `<` that a renderer could take for
/// an HTML tag.
enum Markdown {
    static func inline(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
            .replacingOccurrences(of: "<", with: "&lt;")
    }
}
