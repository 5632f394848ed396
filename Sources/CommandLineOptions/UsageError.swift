/// A command line that cannot be run as given: an unknown option, a missing value, a stray
/// argument, a value out of range.
///
/// Executables print ``line(program:)`` (one line on standard error) and exit with
/// ``exitStatus``, never a crash or a page of usage: the line names the problem and, for a
/// mistyped name, the closest known one.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// `--tokns`, with the closest known option.
        case unknownOption(String, suggestion: String?)
        /// A subcommand that does not exist; `noun` says what one is called (`scenario`).
        case unknownCommand(String, noun: String, suggestion: String?)
        /// No subcommand where one is needed.
        case missingCommand(noun: String)
        /// `--results` at the end, or followed by another option.
        case missingValue(option: String, valueName: String)
        /// `--check=yes` for an option that takes no value.
        case unexpectedValue(option: String)
        /// A plain argument the command does not take.
        case unexpectedArgument(String)
        /// A required option not given; `repeatable` options need at least one.
        case missingOption(option: String, valueName: String?, repeatable: Bool)
        /// A value the option cannot use; `reason` is a predicate ("takes a whole number from 1 to 256, got zero").
        case invalidValue(option: String, reason: String)
    }

    public var kind: Kind
    /// The command it concerns (`touchline-load ingest-burst`), set by the parser and the typed
    /// readers of ``ParsedArguments``; names the program in ``line(program:)``.
    public var command: String?

    public init(_ kind: Kind, command: String? = nil) {
        self.kind = kind
        self.command = command
    }

    /// `invalidValue`: `option` and what is wrong, as in "takes auto, tmpfs or fault-file, got x".
    public static func invalidValue(_ option: String, _ reason: String) -> UsageError {
        UsageError(.invalidValue(option: option, reason: reason))
    }

    /// The exit status of misuse: `EX_USAGE` of sysexits(3), which scripts and supervisors tell
    /// apart from a run that failed (1).
    public static let exitStatus: Int32 = 64

    public var description: String {
        switch kind {
        case .unknownOption(let name, let suggestion):
            "unknown option \(name)" + (suggestion.map { " (did you mean \($0)?)" } ?? "")
        case .unknownCommand(let name, let noun, let suggestion):
            "unknown \(noun) '\(name)'" + (suggestion.map { " (did you mean \($0)?)" } ?? "")
        case .missingCommand(let noun):
            "no \(noun) given"
        case .missingValue(let option, let valueName):
            "\(option) needs a value: \(option) \(valueName)"
        case .unexpectedValue(let option):
            "\(option) takes no value"
        case .unexpectedArgument(let argument):
            "unexpected argument '\(argument)'"
        case .missingOption(let option, let valueName, let repeatable):
            repeatable ? "at least one \(option)\(valueName.map { " \($0)" } ?? "") is required" : "\(option) is required"
        case .invalidValue(let option, let reason):
            "\(option) \(reason)"
        }
    }

    /// What `program` (by default ``command``, as `touchline-load ingest-burst`) prints on
    /// standard error: one line, with a pointer to `--help` when the command line's shape is
    /// wrong and there is no suggestion.
    public func line(program: String? = nil) -> String {
        let program = program ?? command ?? "error"
        let pointer: Bool = switch kind {
        case .unknownOption(_, let suggestion), .unknownCommand(_, _, let suggestion): suggestion == nil
        case .missingCommand, .unexpectedArgument, .missingOption: true
        case .missingValue, .unexpectedValue, .invalidValue: false
        }
        return "\(program): \(description)" + (pointer ? " (see \(program) --help)" : "")
    }
}
