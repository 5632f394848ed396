import HTTP2
import Testing

/// A response's headers kept as received bytes: each asked-for value comes back exactly, in
/// order of arrival, whatever its length or bytes.
@Suite struct ResponseHeadersTests {
    @Test func valuesAreFoundByExactNameInTheOrderReceived() {
        let long = String(repeating: "x", count: 70_000)
        let headers = [HTTP2Header("apns-id", "6f1a2c6e-0000-4000-8000-000000000001"), HTTP2Header("apns-unique-id", ""),
                       HTTP2Header("x-long", long), HTTP2Header("apns-id", "a second one"), HTTP2Header("x-text", "é ✓ \u{0}")]
        var received = HTTP2ResponseHeaders()
        for header in headers {
            var name = header.name, value = header.value
            name.withUTF8 { name in value.withUTF8 { value in received.append(name: name, value: value) } }
        }
        #expect(received == HTTP2ResponseHeaders(headers))
        #expect(received.all == headers)
        #expect(received.value(of: "apns-id") == "6f1a2c6e-0000-4000-8000-000000000001", "the first of two")
        #expect(received.value(of: "apns-unique-id") == "", "present and empty is not absent")
        #expect(received.value(of: "x-long") == long)
        #expect(received.value(of: "x-text") == "é ✓ \u{0}")
        #expect(received.value(of: "APNS-ID") == nil && received.value(of: "apns") == nil && received.value(of: "apns-id-") == nil)
        #expect(HTTP2ResponseHeaders().value(of: "apns-id") == nil && HTTP2ResponseHeaders().all.isEmpty && HTTP2ResponseHeaders().isEmpty)
    }

    @Test func aResponseReadsItsHeadersFromWhatWasReceived() {
        let response = HTTP2Response(status: 200, headers: [HTTP2Header("apns-id", "a-1"), HTTP2Header("apns-unique-id", "u-1")])
        #expect(response.header("apns-unique-id") == "u-1" && response.header("apns-request-id") == nil)
        #expect(response.headers == [HTTP2Header("apns-id", "a-1"), HTTP2Header("apns-unique-id", "u-1")])
    }
}
