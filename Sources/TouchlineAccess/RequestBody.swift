import TouchlineCore
import TouchlineRuntime

/// A JSON object request body read field by field: every problem is a 4xx ``HTTPError`` naming
/// the field, and fields nobody asked for are refused (a typo must not be silently ignored).
package struct RequestBody {
    private let members: [JSONValue.Member]
    private let allowed: Set<JSONMemberName>
    /// Prefix of field names in messages, e.g. `events[3].`.
    private let prefix: String

    /// Parses `bytes` as a JSON object whose members must all be in `allowed`.
    package init(parsing bytes: [UInt8], allowed: Set<JSONMemberName>) throws(HTTPError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw HTTPError(status: 400, code: "malformed_json", message: "the body is not valid JSON: \(error)")
        }
        try self.init(value, allowed: allowed, prefix: "")
    }

    package init(_ value: JSONValue, allowed: Set<JSONMemberName>, prefix: String) throws(HTTPError) {
        guard case .object(let members) = value else {
            throw HTTPError(status: 400, code: "invalid_body", message: "\(prefix.isEmpty ? "the body" : String(prefix.dropLast())) must be a JSON object")
        }
        var seen: Set<JSONMemberName> = []
        for member in members {
            guard allowed.contains(name: member.name) else {
                throw HTTPError(status: 400, code: "unknown_field",
                                message: "unknown field '\(prefix)\(member.name)'; allowed: \(allowed.map(\.text).sorted().joined(separator: ", "))")
            }
            guard seen.insert(JSONMemberName(member.name)).inserted else {
                throw HTTPError(status: 400, code: "duplicate_field", message: "field '\(prefix)\(member.name)' appears twice")
            }
        }
        self.members = members
        self.allowed = allowed
        self.prefix = prefix
    }

    /// The value of `name` (nil when absent; JSON `null` counts as absent).
    package func value(_ name: String) -> JSONValue? {
        guard let value = members.first(where: { $0.isNamed(name) })?.value, value != .null else { return nil }
        return value
    }

    package func string(_ name: String) throws(HTTPError) -> String? {
        guard let value = value(name) else { return nil }
        guard case .string(let text) = value else { throw wrongType(name, "a string") }
        return text
    }

    package func integer(_ name: String) throws(HTTPError) -> Int64? {
        guard let value = value(name) else { return nil }
        guard case .integer(let number) = value else { throw wrongType(name, "an integer") }
        return number
    }

    package func bool(_ name: String) throws(HTTPError) -> Bool? {
        guard let value = value(name) else { return nil }
        guard case .bool(let flag) = value else { throw wrongType(name, "true or false") }
        return flag
    }

    package func object(_ name: String) throws(HTTPError) -> JSONValue? {
        guard let value = value(name) else { return nil }
        guard case .object = value else { throw wrongType(name, "a JSON object") }
        return value
    }

    package func required<T>(_ value: T?, _ name: String) throws(HTTPError) -> T {
        guard let value else { throw HTTPError(status: 400, code: "missing_field", message: "missing field '\(prefix)\(name)'") }
        return value
    }

    /// `name` as messages spell it, with the prefix: `tokens[3].channelId`.
    package func path(_ name: String) -> String { prefix + name }

    package func invalid(_ name: String, _ problem: String) -> HTTPError {
        HTTPError(status: 400, code: "invalid_field", message: "field '\(prefix)\(name)' \(problem)")
    }

    private func wrongType(_ name: String, _ expected: String) -> HTTPError {
        HTTPError(status: 400, code: "invalid_field", message: "field '\(prefix)\(name)' must be \(expected)")
    }
}
