/// A command or subcommand: its options, the plain arguments it takes, its subcommands and the
/// prose of its help text.
///
/// An executable declares one tree of these (`touchline` with `serve`, `health`…), parses its
/// arguments against it with ``CommandLineParser`` and prints ``HelpText`` from the same values.
public struct CommandDeclaration: Sendable {
    /// The word that selects it (`serve`); for the root, the executable's name.
    public var name: String
    /// One line for the parent's list of subcommands.
    public var summary: String
    /// What follows the command's name on the usage line; nil: made from the declaration
    /// (required options, `[options]`, the positional arguments, `<command>`).
    public var synopsis: String?
    /// Paragraphs after the usage line, as written.
    public var description: String?
    /// This command's own options.
    public var groups: [OptionGroup]
    /// Options this command and every subcommand below it take (`--results` of every scenario).
    public var sharedGroups: [OptionGroup]
    public var positional: PositionalArguments?
    public var subcommands: [CommandDeclaration]
    /// What a subcommand is called in messages and the help text: `command`, `scenario`.
    public var subcommandNoun: String
    /// Whether the help text lists the options of every subcommand too (one page for all).
    public var helpListsSubcommandOptions: Bool
    /// Paragraphs at the end of the help text, as written.
    public var epilogue: String?

    public init(name: String, summary: String = "", synopsis: String? = nil, description: String? = nil, groups: [OptionGroup] = [],
                sharedGroups: [OptionGroup] = [], positional: PositionalArguments? = nil, subcommands: [CommandDeclaration] = [],
                subcommandNoun: String = "command", helpListsSubcommandOptions: Bool = false, epilogue: String? = nil) {
        self.name = name
        self.summary = summary
        self.synopsis = synopsis
        self.description = description
        self.groups = groups
        self.sharedGroups = sharedGroups
        self.positional = positional
        self.subcommands = subcommands
        self.subcommandNoun = subcommandNoun
        self.helpListsSubcommandOptions = helpListsSubcommandOptions
        self.epilogue = epilogue
        let names = (groups + sharedGroups).flatMap(\.options).flatMap(\.spellings) + OptionDeclaration.help.spellings
        precondition(Set(names).count == names.count, "\(name) declares an option twice")
    }

    /// The subcommand called `name`.
    public func subcommand(_ name: String) -> CommandDeclaration? { subcommands.first { $0.name == name } }

    /// The commands from this one down `path` (subcommand names), this one first; nil if one is unknown.
    public func commands(along path: [String]) -> [CommandDeclaration]? {
        var commands = [self]
        for name in path {
            guard let next = commands.last!.subcommand(name) else { return nil }
            commands.append(next)
        }
        return commands
    }
}

extension [CommandDeclaration] {
    /// The options the last command of this path takes: its own, the shared ones of every
    /// command on the path, and `--help`.
    var options: [OptionDeclaration] {
        guard let last else { return [.help] }
        return last.groups.flatMap(\.options) + flatMap { $0.sharedGroups.flatMap(\.options) } + [.help]
    }

    /// `touchline serve`.
    var commandName: String { map(\.name).joined(separator: " ") }
}
