/// A NATS subject with wildcards, as streams, consumers and subscriptions name what they take:
/// tokens separated by dots, `*` matching one token, `>` (last) matching one or more.
struct SubjectPattern: Hashable, Sendable {
    let tokens: [Substring]

    init(_ pattern: String) { tokens = pattern.split(separator: ".", omittingEmptySubsequences: false) }

    func matches(_ subject: String) -> Bool {
        let parts = subject.split(separator: ".", omittingEmptySubsequences: false)
        for (index, token) in tokens.enumerated() {
            if token == ">" { return parts.count > index }
            guard index < parts.count, token == "*" || token == parts[index] else { return false }
        }
        return parts.count == tokens.count
    }
}
