@testable import APNsMock
import Testing

@Suite struct JSONDocumentTests {
    @Test(arguments: [
        #"{}"#, #"[]"#, #" {"a" : [1, -2.5e+3, 0.0, true, false, null, "x"]} "#, #""é\u00e9\ud83d\ude00\n""#, "0", "-0", "1E9",
        #"{"nested":{"deeper":{"deepest":[[[]]]}}}"#, "\"\u{1F600}\"",
    ])
    func acceptsValidJSON(_ text: String) throws {
        _ = try JSONDocument(Array(text.utf8))
    }

    @Test(arguments: [
        "", " ", "{", "}", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, "[1,]", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul",
        #"{'a':1}"#, #"{"a":1}{"#, "\"unterminated", "\"bad \\x escape\"", "\"\\u12G4\"", "\"tab\tinside\"", "NaN",
        String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
    ])
    func rejectsInvalidJSON(_ text: String) {
        #expect(throws: JSONDocument.SyntaxError.self) { try JSONDocument(Array(text.utf8)) }
    }

    @Test func rejectsMalformedUTF8() {
        for bytes: [UInt8] in [[0x22, 0xC3, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xFF, 0x22]] {
            #expect(throws: JSONDocument.SyntaxError.self) { try JSONDocument(bytes) }
        }
    }

    @Test func listsMembersAndDecodesValues() throws {
        let document = try JSONDocument(Array(#"{"aps":{"event":"up\"date","n":-42,"f":1.5},"k\u0041":[1]}"#.utf8))
        let root = Array(document.members(of: document.root))
        #expect(root.map(document.key) == ["aps", "kA"])
        #expect(document.keyEquals(root[1], "kA"))
        let aps = Array(document.members(of: root[0].value))
        #expect(aps.map(document.key) == ["event", "n", "f"])
        #expect(document.keyEquals(aps[0], "event") && !document.keyEquals(aps[0], "even"))
        #expect(document.string(aps[0].value) == "up\"date")
        #expect(document.integer(aps[1].value) == -42)
        #expect(document.integer(aps[2].value) == nil)
        #expect(aps[2].value.kind == .number)
        #expect(root[1].value.kind == .array)
    }
}

@Suite struct TextRuleTests {
    @Test func base64AndUUIDChecks() {
        #expect(MockAPNsText.isBase64("MQrGaZWyYdhDKZZK9ZXn7w=="))
        #expect(!MockAPNsText.isBase64("MQrGaZWyYdhDKZZK9ZXn7w="))
        #expect(!MockAPNsText.isBase64("MQ=rGaZW"))
        #expect(!MockAPNsText.isBase64("MQrG-ZWy"))
        #expect(MockAPNsText.isUUID("5F0C2A9E-3b1d-4c7e-9a11-0d2f6b8e4c21"))
        #expect(!MockAPNsText.isUUID("5f0c2a9e3b1d-4c7e-9a11-0d2f6b8e4c21-"))
        let generated = MockAPNsText.uuid(.max, 0)
        #expect(MockAPNsText.isUUID(generated))
        #expect(generated == "ffffffff-ffff-4fff-8000-000000000000")
        #expect(MockAPNsText.base64([0xff, 0x00]) == "/wA=")
        #expect(MockAPNsText.base64URLDecode("_wA") == [0xff, 0x00])
        #expect(MockAPNsText.base64URLDecode("a") == nil)
        #expect(MockAPNsText.decimal("0010") == 10)
        #expect(MockAPNsText.decimal("-1") == nil)
        #expect(MockAPNsText.decimal("") == nil)
    }
}
