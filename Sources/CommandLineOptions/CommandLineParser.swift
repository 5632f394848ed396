/// Reads arguments against a ``CommandDeclaration``: the subcommand words first, then options
/// (`--name VALUE`, `--name=VALUE`, flags alone) and plain arguments in any order; `--` ends the
/// options.
///
/// Pure: it sees only the arguments it is given, and reports problems as ``UsageError``s rather
/// than printing them, so the executables and the tests share one behaviour.
public enum CommandLineParser {
    /// The parsed arguments, or the first problem. With `--help` anywhere, no problem is
    /// reported: the user asked how to use the command, which is the answer to any mistake.
    public static func parse(_ arguments: [String], command: CommandDeclaration) throws(UsageError) -> ParsedArguments {
        let (parsed, errors) = parseReportingAll(arguments, command: command)
        if var first = errors.first, !parsed.helpRequested {
            first.command = parsed.commandName
            throw first
        }
        return parsed
    }

    /// Every problem at once, in the order of the arguments (missing required options last),
    /// for callers that report them all together; the parsed part holds what could be read.
    public static func parseReportingAll(_ arguments: [String], command: CommandDeclaration) -> (ParsedArguments, [UsageError]) {
        var errors: [UsageError] = []
        var remaining = arguments[...]
        var path = [command]
        // Subcommand words come first.
        while let current = path.last, !current.subcommands.isEmpty, let word = remaining.first, !word.hasPrefix("-") {
            remaining.removeFirst()
            guard let next = current.subcommand(word) else {
                let suggestion = NameSuggestion.closest(to: word, among: current.subcommands.map(\.name))
                errors.append(UsageError(.unknownCommand(word, noun: current.subcommandNoun, suggestion: suggestion)))
                return (ParsedArguments(commandPath: path.map(\.name), occurrences: [], positionals: [],
                                        helpRequested: remaining.contains { OptionDeclaration.help.spellings.contains($0) }), errors)
            }
            path.append(next)
        }
        let options = path.options
        var bySpelling: [String: OptionDeclaration] = [:]
        for option in options {
            for spelling in option.spellings { bySpelling[spelling] = option }
        }
        var occurrences: [OptionOccurrence] = []
        var positionals: [String] = []
        var helpRequested = false
        var optionsEnded = false
        while let argument = remaining.popFirst() {
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            let equals = argument.hasPrefix("--") ? argument.firstIndex(of: "=") : nil
            let spelling = equals.map { String(argument[..<$0]) } ?? argument
            let inline = equals.map { String(argument[argument.index(after: $0)...]) }
            guard let option = bySpelling[spelling] else {
                let suggestion = NameSuggestion.closest(to: spelling, among: options.map(\.name))
                errors.append(UsageError(.unknownOption(spelling, suggestion: suggestion)))
                // Its value, if it has one, goes with it rather than being reported a second time.
                if inline == nil, let next = remaining.first, !next.hasPrefix("-") { remaining.removeFirst() }
                continue
            }
            if option == .help {
                helpRequested = true
                continue
            }
            switch option.kind {
            case .flag:
                if inline != nil {
                    errors.append(UsageError(.unexpectedValue(option: spelling)))
                } else {
                    occurrences.append(OptionOccurrence(option: option, spelling: spelling, value: nil))
                }
            case .toggle:
                occurrences.append(OptionOccurrence(option: option, spelling: spelling, value: inline ?? "true"))
            case .value, .repeatedValue:
                if let inline {
                    occurrences.append(OptionOccurrence(option: option, spelling: spelling, value: inline))
                } else if let next = remaining.first, !next.hasPrefix("--") {
                    remaining.removeFirst()
                    occurrences.append(OptionOccurrence(option: option, spelling: spelling, value: next))
                } else {
                    errors.append(UsageError(.missingValue(option: spelling, valueName: option.valueName ?? "VALUE")))
                }
            }
        }
        let leaf = path.last!
        let allowed = leaf.positional?.maximum ?? 0
        for extra in positionals.dropFirst(allowed) { errors.append(UsageError(.unexpectedArgument(extra))) }
        if leaf.subcommands.isEmpty {
            for option in options where option.isRequired && !occurrences.contains(where: { $0.option == option }) {
                errors.append(UsageError(.missingOption(option: option.name, valueName: option.valueName,
                                                        repeatable: option.kind == .repeatedValue)))
            }
        }
        let parsed = ParsedArguments(commandPath: path.map(\.name), occurrences: occurrences,
                                     positionals: Array(positionals.prefix(allowed)), helpRequested: helpRequested)
        return (parsed, errors)
    }
}
