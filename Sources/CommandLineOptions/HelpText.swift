/// The usage and help text of a command, made from its declaration: the usage line, the
/// description, the subcommands with their summaries, every option with its value, help and
/// environment variable, and the epilogue.
///
/// Generated rather than written, so it lists exactly what the parser accepts.
public enum HelpText {
    /// Lines are wrapped to this many columns.
    public static let width = 100

    /// The help of the command reached from `root` along `path` (subcommand words).
    public static func render(_ root: CommandDeclaration, path: [String] = []) -> String {
        let commands = root.commands(along: path) ?? [root]
        let command = commands.last!
        var sections: [String] = ["usage: \(commands.commandName) \(synopsis(commands))".trimmingSuffix()]
        if let description = command.description { sections.append(description) }
        if !command.subcommands.isEmpty {
            let rows = command.subcommands.map { ($0.name, $0.summary) }
            sections.append("\(command.subcommandNoun)s:\n" + table(rows, widest: 18))
        }
        var groups = command.groups + commands.reversed().flatMap(\.sharedGroups)
        if groups.isEmpty { groups = [OptionGroup(nil, [])] }
        groups[groups.count - 1].options.append(.help)
        let named = commands.count > 1 ? " of \(command.name)" : ""
        var tables = groups.map { ("\($0.title ?? "options\(named)"):", $0.options) }
        if command.helpListsSubcommandOptions {
            for subcommand in command.subcommands {
                for group in subcommand.groups where !group.options.isEmpty {
                    tables.append(("\(subcommand.name)\(group.title.map { ", \($0)" } ?? ""):", group.options))
                }
            }
        }
        // One column for the whole page, so the tables line up.
        let widest = min(tables.flatMap { $0.1.map(\.helpName.count) }.max() ?? 0, 30)
        for (title, options) in tables { sections.append(title + "\n" + optionTable(options, widest: widest, aligned: true)) }
        if let epilogue = command.epilogue { sections.append(epilogue) }
        return sections.joined(separator: "\n\n")
    }

    /// The options as help lines (`  --listen ADDRESS:PORT   provider API address… [TOUCHLINE_LISTEN]`).
    /// `widest`: the width of the option column at most (longer ones put their text below);
    /// `aligned`: exactly that wide, to line up with other tables of the page.
    public static func optionTable(_ options: [OptionDeclaration], widest: Int = 30, aligned: Bool = false) -> String {
        table(options.map { option in
            (option.helpName, option.help + (option.environmentVariable.map { " [\($0)]" } ?? ""))
        }, widest: widest, aligned: aligned)
    }

    /// What follows the command's name on the usage line.
    static func synopsis(_ commands: [CommandDeclaration]) -> String {
        let command = commands.last!
        if let synopsis = command.synopsis { return synopsis }
        var parts: [String] = []
        if !command.subcommands.isEmpty { parts.append("<\(command.subcommandNoun)>") }
        let options = commands.options
        parts += options.filter(\.isRequired).map(\.synopsis)
        if options.contains(where: { !$0.isRequired && $0 != .help }) { parts.append("[options]") }
        if let positional = command.positional {
            parts.append(positional.maximum > 1 ? "[\(positional.name)...]" : "[\(positional.name)]")
        }
        return parts.joined(separator: " ")
    }

    /// Two columns: the first as wide as its widest entry up to `widest` (a longer one puts its
    /// text on the next line), the second wrapped to ``width``.
    static func table(_ rows: [(String, String)], widest: Int, aligned: Bool = false) -> String {
        let column = (aligned ? widest : min(rows.map(\.0.count).max() ?? 0, widest)) + 4
        var lines: [String] = []
        for (left, right) in rows {
            let wrapped = wrap(right, width: width - column)
            var first = "  " + left
            if first.count + 2 > column {
                lines.append(first)
                first = ""
            }
            for (index, text) in wrapped.enumerated() {
                let start = index == 0 ? first : ""
                lines.append((start + String(repeating: " ", count: column - start.count) + text).trimmingSuffix())
            }
            if wrapped.isEmpty, !first.isEmpty { lines.append(first) }
        }
        return lines.joined(separator: "\n")
    }

    /// `text` in lines of at most `width` characters, broken at spaces (a longer word stands alone).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}

extension OptionDeclaration {
    /// `--results DIR`, `--help, -h`: the option's first column.
    fileprivate var helpName: String { ([synopsis] + aliases).joined(separator: ", ") }
}

extension String {
    fileprivate func trimmingSuffix() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
