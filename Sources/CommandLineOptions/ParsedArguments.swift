/// One option as it was given: which declaration, how it was spelt, and its value (nil for a flag).
public struct OptionOccurrence: Sendable, Equatable {
    public var option: OptionDeclaration
    /// As typed: the name or an alias, without `=VALUE`.
    public var spelling: String
    public var value: String?

    public init(option: OptionDeclaration, spelling: String, value: String?) {
        self.option = option
        self.spelling = spelling
        self.value = value
    }
}

/// What ``CommandLineParser`` read: the subcommand chosen, the options in the order given and
/// the plain arguments, with typed readers that turn a bad value into a ``UsageError`` naming
/// the option.
public struct ParsedArguments: Sendable, Equatable {
    /// The root command's name, then each subcommand word: `["touchline", "serve"]`.
    public var commandPath: [String]
    /// Every option given, in order, repeats included.
    public var occurrences: [OptionOccurrence]
    public var positionals: [String]
    /// `--help` or `-h` was given: print the help text and do nothing else.
    public var helpRequested: Bool

    public init(commandPath: [String], occurrences: [OptionOccurrence], positionals: [String], helpRequested: Bool) {
        self.commandPath = commandPath
        self.occurrences = occurrences
        self.positionals = positionals
        self.helpRequested = helpRequested
    }

    /// The subcommand words after the root's name (`["serve"]`), for ``HelpText/render(_:path:)``.
    public var subcommandPath: [String] { Array(commandPath.dropFirst()) }

    /// The chosen subcommand's word; nil when none was given.
    public var subcommand: String? { commandPath.count > 1 ? commandPath.last : nil }

    /// `touchline-load ingest-burst`, as messages name the command.
    public var commandName: String { commandPath.joined(separator: " ") }

    public func isSet(_ option: OptionDeclaration) -> Bool { occurrences.contains { $0.option.name == option.name } }

    /// Every value given for `option`, in order.
    public func values(_ option: OptionDeclaration) -> [String] {
        occurrences.filter { $0.option.name == option.name }.compactMap(\.value)
    }

    /// The last value given for `option`.
    public func value(_ option: OptionDeclaration) -> String? { values(option).last }

    /// The last value as a whole number within `range`; nil when not given.
    public func integer(_ option: OptionDeclaration, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = value(option) else { return nil }
        guard let number = Int(text), range.contains(number) else { throw invalid(option, Self.describe(range) + ", got \(text)") }
        return number
    }

    /// The last value as a number within `range`; nil when not given.
    public func number(_ option: OptionDeclaration, in range: ClosedRange<Double>) throws(UsageError) -> Double? {
        guard let text = value(option) else { return nil }
        guard let number = Double(text), number.isFinite, range.contains(number) else {
            throw invalid(option, "takes a number from \(Self.plain(range.lowerBound)) to \(Self.plain(range.upperBound)), got \(text)")
        }
        return number
    }

    /// The last value as one of `choices`' raw values; nil when not given.
    public func choice<Choice: RawRepresentable & CaseIterable>(_ option: OptionDeclaration, as _: Choice.Type) throws(UsageError) -> Choice?
    where Choice.RawValue == String {
        guard let text = value(option) else { return nil }
        guard let choice = Choice(rawValue: text) else {
            let names = Choice.allCases.map(\.rawValue)
            let listed = names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + names.last! : names.joined()
            throw invalid(option, "takes \(listed), got \(text)")
        }
        return choice
    }

    /// A toggle's last value as on or off (`true`/`1`/`yes`/`on`, `false`/`0`/`no`/`off`); nil when not given.
    public func toggle(_ option: OptionDeclaration) throws(UsageError) -> Bool? {
        guard let text = occurrences.last(where: { $0.option.name == option.name })?.value ?? (isSet(option) ? "true" : nil) else { return nil }
        guard let on = Self.switchWord(text) else { throw invalid(option, "takes true or false, got \(text)") }
        return on
    }

    /// A ``UsageError`` for a bad value of `option`, naming this command: for checks of the
    /// caller's own ("takes three positive numbers of seconds").
    public func invalid(_ option: OptionDeclaration, _ reason: String) -> UsageError {
        UsageError(.invalidValue(option: option.name, reason: reason), command: commandName)
    }

    /// On or off as flags and environment variables say it; nil for any other word.
    public static func switchWord(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "1", "true", "yes", "on": true
        case "0", "false", "no", "off": false
        default: nil
        }
    }

    private static func describe(_ range: ClosedRange<Int>) -> String {
        switch (range.lowerBound, range.upperBound) {
        case (0, .max): "takes a whole number, 0 or more"
        case (1, .max): "takes a positive whole number"
        case (let low, .max): "takes a whole number of at least \(low)"
        case (let low, let high): "takes a whole number from \(low) to \(high)"
        }
    }

    /// `1` rather than `1.0`.
    private static func plain(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}
