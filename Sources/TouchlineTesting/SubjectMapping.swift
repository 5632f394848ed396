import TouchlineCore

/// A subject mapping as the servers apply it to every publish (`mappings` in their
/// configuration): a source with `*` tokens and a destination that places them with
/// `{{wildcard(n)}}` and partitions on one of them with `{{partition(count,n)}}` (FNV-1a of the
/// token, modulo the count: ``ChannelPartitioning``). The gateways' ingest subject is mapped so
/// (docs/cluster.md, "Ingest on any instance").
public struct SubjectMapping: Sendable {
    private enum Part: Sendable {
        case text(String)
        case wildcard(Int)
        case partition(ChannelPartitioning, Int)
    }

    private let source: SubjectPattern
    private let destination: [Part]

    /// Nil for a destination this reading does not know (another function, several tokens
    /// hashed together, a count beyond ``ChannelPartitioning``'s).
    public init?(source: String, destination: String) {
        self.source = SubjectPattern(source)
        let destination = Substring(destination)
        var parts: [Part] = []
        var rest = destination
        while let open = rest.range(of: "{{") {
            parts.append(.text(String(rest[..<open.lowerBound])))
            guard let close = rest[open.upperBound...].range(of: "}}") else { return nil }
            let call = rest[open.upperBound..<close.lowerBound].filter { $0 != " " }
            let arguments = call.drop { $0 != "(" }.dropFirst().dropLast().split(separator: ",").compactMap { Int($0) }
            if call.hasPrefix("wildcard("), arguments.count == 1 {
                parts.append(.wildcard(arguments[0]))
            } else if call.hasPrefix("partition("), arguments.count == 2, let partitioning = ChannelPartitioning(count: arguments[0]) {
                parts.append(.partition(partitioning, arguments[1]))
            } else {
                return nil
            }
            rest = rest[close.upperBound...]
        }
        parts.append(.text(String(rest)))
        self.destination = parts
    }

    /// Where a publish to `subject` goes, if this mapping takes it.
    public func map(_ subject: String) -> String? {
        guard source.matches(subject) else { return nil }
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        let wildcards = source.tokens.indices.filter { source.tokens[$0] == "*" }.map { String(tokens[$0]) }
        var mapped = ""
        for part in destination {
            switch part {
            case .text(let text): mapped += text
            case .wildcard(let index):
                guard wildcards.indices.contains(index - 1) else { return nil }
                mapped += wildcards[index - 1]
            case .partition(let partitioning, let index):
                guard wildcards.indices.contains(index - 1) else { return nil }
                mapped += String(partitioning.partition(of: wildcards[index - 1]))
            }
        }
        return mapped
    }
}
