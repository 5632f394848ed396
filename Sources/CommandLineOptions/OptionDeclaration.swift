/// One command-line option, declared once: its name, what its value looks like, its help text
/// and, where the same setting can come from the environment, its variable.
///
/// The parser, the generated usage text and the "did you mean" hints all read these values, so
/// the help a user reads cannot drift from what the parser accepts.
public struct OptionDeclaration: Sendable, Equatable {
    /// How an option takes its value.
    public enum Kind: Sendable, Equatable {
        /// Present or absent (`--check`); `--check=VALUE` is refused.
        case flag
        /// A flag that can also be turned off from the command line (`--dev`, `--dev=false`):
        /// alone it reads as `true`; the text after `=` is kept for the caller to judge
        /// (``ParsedArguments/toggle(_:)``).
        case toggle
        /// One value (`--results DIR` or `--results=DIR`); given twice, the last one counts.
        case value
        /// A value that may be given several times; every value is kept, in order.
        case repeatedValue
    }

    /// The long name with its dashes, `--results`.
    public var name: String
    /// Other spellings, such as `-h`.
    public var aliases: [String]
    public var kind: Kind
    /// What the value looks like in the help text (`DIR`, `KEYID=PATH`); nil for flags.
    public var valueName: String?
    /// One sentence or two; wrapped by the help text.
    public var help: String
    /// The environment variable that sets the same thing, shown in the help text. Reading it is
    /// the caller's business: the parser only sees the arguments.
    public var environmentVariable: String?
    /// The command cannot run without it; the parser reports it missing (not when `--help` is given).
    public var isRequired: Bool

    public init(name: String, aliases: [String] = [], kind: Kind, valueName: String? = nil, help: String,
                environmentVariable: String? = nil, isRequired: Bool = false) {
        precondition(name.hasPrefix("--") && name.count > 2, "an option's name starts with --: \(name)")
        precondition((kind == .value || kind == .repeatedValue) == (valueName != nil), "\(name): a value name exactly for options with values")
        self.name = name
        self.aliases = aliases
        self.kind = kind
        self.valueName = valueName
        self.help = help
        self.environmentVariable = environmentVariable
        self.isRequired = isRequired
    }

    /// `--check`: present or absent.
    public static func flag(_ name: String, aliases: [String] = [], help: String, environmentVariable: String? = nil) -> Self {
        Self(name: name, aliases: aliases, kind: .flag, help: help, environmentVariable: environmentVariable)
    }

    /// `--dev`, or `--dev=false` to turn it off again.
    public static func toggle(_ name: String, help: String, environmentVariable: String? = nil) -> Self {
        Self(name: name, kind: .toggle, help: help, environmentVariable: environmentVariable)
    }

    /// `--results DIR`: one value, the last one given counts.
    public static func value(_ name: String, _ valueName: String, help: String, environmentVariable: String? = nil,
                             required: Bool = false) -> Self {
        Self(name: name, kind: .value, valueName: valueName, help: help, environmentVariable: environmentVariable, isRequired: required)
    }

    /// `--key KEYID=PATH`, repeatable: every value is kept.
    public static func repeated(_ name: String, _ valueName: String, help: String, environmentVariable: String? = nil,
                                required: Bool = false) -> Self {
        Self(name: name, kind: .repeatedValue, valueName: valueName, help: help, environmentVariable: environmentVariable,
             isRequired: required)
    }

    /// `--help` and `-h`, which every command takes.
    public static let help = OptionDeclaration.flag("--help", aliases: ["-h"], help: "show this help")

    /// Whether the option takes a value (`--name VALUE` or `--name=VALUE`).
    public var takesValue: Bool { kind == .value || kind == .repeatedValue }

    /// The option as the help text and messages show it: `--results DIR`, `--check`.
    public var synopsis: String { valueName.map { "\(name) \($0)" } ?? name }

    /// Every spelling that selects this option.
    var spellings: [String] { [name] + aliases }
}

/// Options shown together in the help text under a title ("Network and TLS:").
public struct OptionGroup: Sendable, Equatable {
    /// nil: "options".
    public var title: String?
    public var options: [OptionDeclaration]

    public init(_ title: String? = nil, _ options: [OptionDeclaration]) {
        self.title = title
        self.options = options
    }
}

/// The plain arguments a command takes (`touchline health [URL]`).
public struct PositionalArguments: Sendable, Equatable {
    /// As the usage line shows it: `URL`.
    public var name: String
    /// How many at most.
    public var maximum: Int

    public init(_ name: String, maximum: Int = 1) {
        self.name = name
        self.maximum = maximum
    }
}
