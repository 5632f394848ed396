import Testing
import TouchlineCore

@Suite struct JSONParserTests {
    private func parse(_ text: String, maximumDepth: Int = JSONParser.defaultMaximumDepth) throws(JSONParseError) -> JSONValue {
        try JSONParser.parse(Array(text.utf8), maximumDepth: maximumDepth)
    }

    /// The error text for an input that must be rejected.
    private func failure(_ text: String, maximumDepth: Int = JSONParser.defaultMaximumDepth) -> String? {
        failure(Array(text.utf8), maximumDepth: maximumDepth)
    }

    private func failure(_ bytes: [UInt8], maximumDepth: Int = JSONParser.defaultMaximumDepth) -> String? {
        do {
            _ = try JSONParser.parse(bytes, maximumDepth: maximumDepth)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func objectsKeepMemberOrderAndNest() throws {
        let value = try parse(#" { "z": 1, "a": [true, false, null], "m": {"k": "v"} } "#)
        #expect(value == ["z": 1, "a": [true, false, nil], "m": ["k": "v"]])
        #expect(value.encoded == Array(#"{"z":1,"a":[true,false,null],"m":{"k":"v"}}"#.utf8))
    }

    @Test func scalarsAtTheTopLevel() throws {
        #expect(try parse("true") == .bool(true))
        #expect(try parse(" null\n") == .null)
        #expect(try parse(#""x""#) == .string("x"))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{}") == .object([]))
    }

    @Test func integersAndNumbers() throws {
        #expect(try parse("0") == .integer(0))
        #expect(try parse("-0") == .integer(0))
        #expect(try parse("42") == .integer(42))
        #expect(try parse("-17") == .integer(-17))
        #expect(try parse("9223372036854775807") == .integer(.max))
        #expect(try parse("-9223372036854775808") == .integer(.min))
        #expect(try parse("9223372036854775808") == .number(9_223_372_036_854_775_808))
        #expect(try parse("1.5") == .number(1.5))
        #expect(try parse("1.0") == .number(1))
        #expect(try parse("-2.5e3") == .number(-2500))
        #expect(try parse("1E+2") == .number(100))
        #expect(try parse("5e-1") == .number(0.5))
    }

    @Test func malformedNumbersAreRejectedWithTheirOffset() {
        #expect(failure("01") == "leading zeros are not allowed in numbers at byte 0")
        #expect(failure("[-]") == "expected a digit at byte 2")
        #expect(failure("1.") == "unexpected end of input, expected a digit at byte 2")
        #expect(failure("1.e5") == "expected a digit at byte 2")
        #expect(failure("1e") == "unexpected end of input, expected a digit at byte 2")
        #expect(failure("+1") == "expected a value at byte 0")
        #expect(failure(".5") == "expected a value at byte 0")
        #expect(failure("[1e400]") == "number out of range at byte 1")
    }

    @Test func escapesAndSurrogatePairsDecode() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{c}\n\r\t"))
        #expect(try parse(#""\u00e9\u20AC""#) == .string("é€"))
        #expect(try parse(#""\ud83d\ude00 ok""#) == .string("😀 ok"))
        #expect(try parse(#""héllo ⚽""#) == .string("héllo ⚽"))
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
    }

    @Test func badStringsAreRejected() {
        #expect(failure(#""abc"#) == "unterminated string at byte 4")
        #expect(failure("\"a\nb\"") == "unescaped control character in string at byte 2")
        #expect(failure(#""a\x""#) == "invalid escape sequence at byte 2")
        #expect(failure(#""\u12G4""#) == #"invalid \u escape at byte 1"#)
        #expect(failure(#""\ud83d""#) == #"unpaired surrogate in \u escape at byte 1"#)
        #expect(failure(#""\ud83d\u0041""#) == #"unpaired surrogate in \u escape at byte 1"#)
        #expect(failure(#""x\ude00""#) == #"unpaired surrogate in \u escape at byte 2"#)
        #expect(failure([0x22, 0xC3, 0x28, 0x22]) == "invalid UTF-8 in string at byte 1")
        #expect(failure([0x22, 0x5C, 0x6E, 0xFF, 0x22]) == "invalid UTF-8 in string at byte 1")
    }

    @Test func structuralErrorsNameWhatWasExpectedAndWhere() {
        #expect(failure(#"{"a": 1 "b": 2}"#) == "expected ',' or '}' at byte 8")
        #expect(failure(#"{"id": "m-1", "home": 2 x}"#) == "expected ',' or '}' at byte 24")
        #expect(failure("[1 2]") == "expected ',' or ']' at byte 3")
        #expect(failure("[1, 2") == "unexpected end of input, expected ',' or ']' at byte 5")
        #expect(failure(#"{"a": 1, "a": 2}"#) == #"duplicate member name "a" at byte 9"#)
        #expect(failure("[1,]") == "expected a value at byte 3")
        #expect(failure(#"{"a":1,}"#) == "expected a string member name at byte 7")
        #expect(failure("{a:1}") == "expected a string member name at byte 1")
        #expect(failure(#"{"a" 1}"#) == "expected ':' at byte 5")
        #expect(failure(#"{"a":"#) == "unexpected end of input, expected a value at byte 5")
        #expect(failure("") == "unexpected end of input, expected a value at byte 0")
        #expect(failure("   ") == "unexpected end of input, expected a value at byte 3")
        #expect(failure("tru") == "invalid literal, expected 'true' at byte 0")
        #expect(failure("nul1") == "invalid literal, expected 'null' at byte 0")
        #expect(failure("{} {}") == "unexpected content after the JSON value at byte 3")
        #expect(failure("[1] // comment") == "unexpected content after the JSON value at byte 4")
    }

    @Test func duplicateMemberNamesAreReported() {
        #expect(failure(#"{"a": 1, "b": 2, "a": 3}"#) == #"duplicate member name "a" at byte 17"#)
        #expect(failure(#"{"x": {"k": 1, "k": 1}}"#) == #"duplicate member name "k" at byte 15"#)
        // Escaped and literal spellings of one name are the same name.
        #expect(failure(#"{"ab": 1, "a\u0062": 2}"#) == #"duplicate member name "ab" at byte 10"#)
        // Names compare by code units (RFC 8259): canonically equivalent spellings are two names,
        // below and above the size where the parser switches to a set of names.
        #expect(failure(#"{"\u00e9": 1, "e\u0301": 2}"#) == nil)
        #expect(failure(#"{"K": 1, "\u212a": 2}"#) == nil)
        let padded = (0..<20).map { #""p\#($0)": 0"# }.joined(separator: ",")
        #expect(failure(#"{\#(padded), "\u00e9": 1, "e\u0301": 2}"#) == nil)
        #expect(failure(#"{\#(padded), "\u00e9": 1, "\u00e9": 2}"#) != nil)
        let many = (0..<40).map { #""m\#($0)": \#($0)"# }.joined(separator: ",")
        #expect(failure("{\(many), \"m39\": 0}") != nil)
        #expect(failure("{\(many)}") == nil)
    }

    @Test func nestingIsBoundedByTheDepthLimit() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(failure(ok) == nil)
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(failure(deep) == "nesting deeper than 64 levels at byte 64")
        #expect(failure(#"{"a":{"b":{}}}"#, maximumDepth: 2) == "nesting deeper than 2 levels at byte 10")
        // A hostile body of unbalanced brackets fails cleanly instead of exhausting the stack.
        #expect(failure(String(repeating: "[", count: 100_000)) == "nesting deeper than 64 levels at byte 64")
    }

    @Test func parsesFromARawBuffer() throws {
        let bytes = Array(#"{"type":"goal","team":"home"}"#.utf8)
        let value = try bytes.withUnsafeBytes { buffer throws(JSONParseError) in try JSONParser.parse(buffer) }
        #expect(value == ["type": "goal", "team": "home"])
    }

    @Test func encodedValuesParseBackToThemselves() throws {
        let value: JSONValue = ["s": "quote \" slash \\ tab \t ctl \u{1} é 😀", "n": -3, "d": 0.25, "a": [[], [:], nil]]
        #expect(try JSONParser.parse(value.encoded) == value)
    }
}
