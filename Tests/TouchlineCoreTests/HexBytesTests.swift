import Testing
import TouchlineCore

/// The word-at-a-time hex check against the plain definition: every byte value at every
/// position of texts long enough to have whole words and a tail.
@Suite struct HexBytesTests {
    static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    @Test func agreesWithThePlainDefinitionForEveryByteAtEveryPosition() {
        var disagreements: [String] = []
        for length in 0...19 {
            for position in 0..<max(length, 1) {
                for value in UInt8.min...UInt8.max {
                    var bytes = Array(repeating: UInt8(ascii: "c"), count: length)
                    if length > 0 { bytes[position] = value }
                    let text = String(decoding: bytes, as: UTF8.self)
                    let expected = text.utf8.count % 2 == 0 && text.utf8.allSatisfy(Self.isHexDigit)
                    if HexBytes.isWholeBytes(text) != expected, disagreements.count < 5 {
                        disagreements.append("length \(length), byte \(value) at \(position)")
                    }
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
    }

    @Test func devicesTokensOfEitherCaseAreWholeBytes() {
        #expect(HexBytes.isWholeBytes(String(repeating: "0123456789abcdefABCDEF", count: 9) + "00"))
        #expect(!HexBytes.isWholeBytes(String(repeating: "0123456789abcdef", count: 4) + "0"), "an odd count")
        #expect(!HexBytes.isWholeBytes(String(repeating: "ab", count: 31) + "é"), "beyond ASCII")
        #expect(HexBytes.isWholeBytes(""))
    }
}
