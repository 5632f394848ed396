/// The characters no identifier a provider gives may hold: user ids, follow topics, and the
/// ids and names a request looks things up by.
///
/// Refused are Unicode's control characters (`Cc`: C0, DEL and the C1 controls U+0080 to
/// U+009F), its format characters (`Cf`: the bidirectional embeddings, overrides and isolates
/// U+202A to U+202E and U+2066 to U+2069, zero-width spaces and joiners, the byte-order mark,
/// the soft hyphen) and the line and paragraph separators U+2028 and U+2029 (`Zl`, `Zp`). Each
/// either makes two ids that look alike compare unequal, or cuts or reorders a line where an id
/// is shown (a log line, a JSON Lines export, a terminal, a support tool); no id needs one.
/// Identifiers are otherwise stored and compared whole, byte for byte.
package enum IdentifierCharacters {
    /// Whether an identifier may not hold `scalar`.
    static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// What is wrong with `text` as an identifier: the first refused character, by code point
    /// and position (never the character itself, which could break the message where it is
    /// shown), or nil when it has none.
    package static func problem(in text: String) -> String? {
        for (index, scalar) in text.unicodeScalars.enumerated() where isRefused(scalar) {
            return "holds \(codePoint(scalar)) at character \(index + 1)"
        }
        return nil
    }

    /// `U+2028`: a code point as messages name it.
    static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let digits = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
