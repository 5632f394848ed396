import TouchlineCore

/// The checks every JSON-object setting (`personalQueue`, `webhooks`) makes of its members, so
/// that each reports an unknown key or an out-of-range number in the same words.
enum ConfigurationMembers {
    /// The object's members, refusing one not in `allowed` (with the closest known name); `path` prefixes nested members.
    static func members(of value: JSONValue, allowed: [String], path: String?) throws(InvalidConfigurationValue) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            throw InvalidConfigurationValue(path.map { "member \($0) must be an object" } ?? "must be an object")
        }
        var result: [String: JSONValue] = [:]
        for member in members {
            guard allowed.contains(member.name) else {
                let hint = GatewayConfigurationError.closestName(to: member.name, among: allowed).map { " (did you mean '\($0)'?)" } ?? ""
                throw InvalidConfigurationValue("has unknown key '\(path.map { "\($0)." } ?? "")\(member.name)'\(hint)")
            }
            result[member.name] = member.value
        }
        return result
    }

    /// The whole number at `key` (default `path`) within `range`, nil when absent; `path` names it in the message.
    static func integer(_ members: [String: JSONValue], _ path: String, _ range: ClosedRange<Int>,
                        key: String? = nil) throws(InvalidConfigurationValue) -> Int? {
        guard let value = members[key ?? path] else { return nil }
        guard case .integer(let number) = value, let integer = Int(exactly: number), range.contains(integer) else {
            throw InvalidConfigurationValue("member \(path) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return integer
    }
}
