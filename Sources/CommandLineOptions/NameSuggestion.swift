/// "Did you mean" for mistyped names: options, subcommands, and any other list a caller has
/// (the gateway uses it for configuration file keys too).
public enum NameSuggestion {
    /// The closest of `candidates` to a mistyped `name`: one differing only in case, or one
    /// within an edit distance of 2 when the name is long enough for that to be telling (at
    /// least three characters per edit), so short typos do not suggest unrelated names.
    public static func closest(to name: String, among candidates: [String]) -> String? {
        let lowered = name.lowercased()
        if let sameLetters = candidates.first(where: { $0.lowercased() == lowered }) { return sameLetters }
        let scored = candidates.map { ($0, editDistance(Array(lowered.utf8), Array($0.lowercased().utf8))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2, best.1 * 3 <= name.utf8.count else { return nil }
        return best.0
    }

    /// Levenshtein distance, one row at a time.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
