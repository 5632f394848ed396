/// The character classes of RFC 9110/9112 the parser checks bytes against.
enum HTTP1Grammar {
    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let colon = UInt8(ascii: ":")
    static let comma = UInt8(ascii: ",")

    /// `tchar`: the characters of a method, a header name or a transfer coding.
    static func isTokenChar(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// A byte allowed inside a field value: visible characters, space, tab and obs-text; never
    /// another control character or DEL (a NUL, CR or LF there is how header injection starts).
    static func isFieldValueChar(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 0x20 && byte != 0x7f)
    }

    /// Optional whitespace (`OWS`, `BWS`).
    static func isWhitespace(_ byte: UInt8) -> Bool { byte == space || byte == tab }

    /// A byte of a request target: visible ASCII. Spaces and control characters would be
    /// framing; bytes above 0x7F must be percent-encoded.
    static func isTargetChar(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x7f }

    /// A byte of a `Host` value: `uri-host [":" port]`, an IP literal in brackets included.
    static func isHostChar(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "!"), UInt8(ascii: "$"),
             UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"),
             UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"),
             UInt8(ascii: "%"):
            true
        default:
            false
        }
    }

    /// The value of a hexadecimal digit, or nil.
    static func hexValue(_ byte: UInt8) -> UInt64? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt64(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt64(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt64(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// `bytes` without leading and trailing optional whitespace.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, isWhitespace(first) { slice.removeFirst() }
        while let last = slice.last, isWhitespace(last) { slice.removeLast() }
        return slice
    }

    /// The elements of a comma-separated list value, trimmed; empty elements are skipped, as
    /// RFC 9110 §5.6.1 asks of recipients.
    static func listElements(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        bytes.split(separator: comma, omittingEmptySubsequences: false).map(trimmed).filter { !$0.isEmpty }
    }

    /// True when `bytes` equals the lowercase ASCII `word` ignoring case.
    static func equalsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ word: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        return bytes.count == expected.count && zip(bytes, expected).allSatisfy { asciiLowercased($0) == $1 }
    }
}
