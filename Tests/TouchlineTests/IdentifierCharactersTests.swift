import Testing
@testable import Touchline
@testable import TouchlineConfiguration

/// Which characters an identifier may not hold (docs/api.md, "Limits"), and how a refusal names
/// them.
struct IdentifierCharactersTests {
    /// One of each kind: C0, DEL, C1 (NEL, CSI), the separators, bidi override and isolate,
    /// zero-width space and joiner, byte-order mark, soft hyphen.
    static let refused: [Unicode.Scalar] = ["\u{0}", "\u{1B}", "\u{7F}", "\u{85}", "\u{9B}", "\u{2028}", "\u{2029}", "\u{202E}",
                                            "\u{2066}", "\u{200B}", "\u{200D}", "\u{FEFF}", "\u{AD}"]

    @Test func controlFormatAndSeparatorCharactersAreRefused() {
        for scalar in Self.refused {
            #expect(IdentifierCharacters.isRefused(scalar), "\(IdentifierCharacters.codePoint(scalar))")
        }
        for text in ["fan-42", "fän ü", "team:ARS", "Ürün 😀", "東京", "a b", "\u{A0}"] {
            #expect(IdentifierCharacters.problem(in: text) == nil, "\(text)")
        }
    }

    @Test func theProblemNamesTheCodePointAndItsPosition() {
        #expect(IdentifierCharacters.problem(in: "fan\u{2028}x") == "holds U+2028 at character 4")
        #expect(IdentifierCharacters.problem(in: "\u{85}") == "holds U+0085 at character 1")
        #expect(IdentifierCharacters.problem(in: "é\u{E0001}") == "holds U+E0001 at character 2")
    }
}
