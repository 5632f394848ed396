/// Why a provider event (or a stored state) was rejected, naming the field, e.g.
/// `field 'team' must be "home" or "away"`. The HTTP layer returns `description` as the
/// `message` of a 4xx.
public struct EventValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The offending field (dotted for nested ones, `alert.title`), or `nil` for the whole event.
    public var field: String?
    public var description: String

    public init(field: String?, _ description: String) {
        self.field = field
        self.description = description
    }
}

/// Reads the members of one JSON object with validation, remembering which were read so that
/// `rejectUnknown()` can refuse any member the event type does not define.
struct EventFields {
    private let members: [JSONValue.Member]
    private let prefix: String
    private var known: Set<JSONMemberName>

    /// - Parameters:
    ///   - what: names the whole value in the error when it is not an object ("event").
    ///   - prefix: prepended to field names in errors, for nested objects ("alert.").
    ///   - envelope: members handled by the caller (`seq`), accepted and not read here.
    init(_ value: JSONValue, what: String, prefix: String = "", envelope: Set<JSONMemberName> = []) throws(EventValidationError) {
        guard case .object(let members) = value else {
            throw EventValidationError(field: prefix.isEmpty ? nil : String(prefix.dropLast()), "\(what) must be a JSON object")
        }
        self.members = members
        self.prefix = prefix
        self.known = envelope
    }

    /// The raw value of an optional member; `null` counts as absent.
    mutating func value(_ name: String) -> JSONValue? {
        known.insert(JSONMemberName(name))
        guard let value = members.first(where: { $0.isNamed(name) })?.value, value != .null else { return nil }
        return value
    }

    func error(_ name: String, _ requirement: String) -> EventValidationError {
        EventValidationError(field: prefix + name, "field '\(prefix + name)' \(requirement)")
    }

    func required<T>(_ value: T?, _ name: String) throws(EventValidationError) -> T {
        guard let value else { throw EventValidationError(field: prefix + name, "missing field '\(prefix + name)'") }
        return value
    }

    mutating func string(_ name: String, maxLength: Int = 64) throws(EventValidationError) -> String? {
        guard let value = value(name) else { return nil }
        guard case .string(let text) = value, !text.isEmpty, text.count <= maxLength else {
            throw error(name, "must be a string of 1 to \(maxLength) characters")
        }
        return text
    }

    mutating func integer(_ name: String, in range: ClosedRange<Int>) throws(EventValidationError) -> Int? {
        guard let value = value(name) else { return nil }
        guard case .integer(let number) = value, number >= range.lowerBound, number <= range.upperBound else {
            throw error(name, "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(number)
    }

    mutating func bool(_ name: String) throws(EventValidationError) -> Bool? {
        guard let value = value(name) else { return nil }
        guard case .bool(let flag) = value else { throw error(name, "must be true or false") }
        return flag
    }

    /// A string from a closed set, such as `"home"` / `"away"`.
    mutating func choice<T: RawRepresentable & CaseIterable>(_ name: String, _ type: T.Type) throws(EventValidationError) -> T?
    where T.RawValue == String {
        guard let value = value(name) else { return nil }
        guard case .string(let text) = value, let choice = T(rawValue: text) else {
            throw error(name, "must be \(Self.listing(T.allCases.map(\.rawValue)))")
        }
        return choice
    }

    /// `"a" or "b"` for two options, `one of "a", "b", "c"` for more.
    static func listing(_ options: [String]) -> String {
        let quoted = options.map { "\"\($0)\"" }
        return quoted.count == 2 ? "\(quoted[0]) or \(quoted[1])" : "one of \(quoted.joined(separator: ", "))"
    }

    func rejectUnknown() throws(EventValidationError) {
        if let unknown = members.first(where: { !known.contains(name: $0.name) }) {
            throw EventValidationError(field: prefix + unknown.name, "unknown field '\(prefix + unknown.name)'")
        }
    }
}
