import TouchlineCore

/// The strict JSON parser on any bytes: it refuses or parses, never traps, and what it parses
/// encodes to a fixed point (encoding the value parsed back from an encoding gives the same bytes).
enum JSONParserTarget {
    static func run(_ bytes: [UInt8]) {
        guard let value = try? JSONParser.parse(bytes) else { return }
        let once = value.encoded
        guard let again = try? JSONParser.parse(once) else {
            return require(false, "the encoding of a parsed value does not parse: \(String(decoding: once, as: UTF8.self))")
        }
        require(again.encoded == once, "encoding is not a fixed point")
    }
}
