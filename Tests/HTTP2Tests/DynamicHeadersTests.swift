import HTTP2
import Testing

@Suite("Dynamic headers")
struct DynamicHeadersTests {
    @Test func settingAHeaderReplacesItsValueInPlaceOrAppendsIt() {
        var headers = DynamicHeaders()
        headers.add("apns-request-id", "request-1")
        headers.add("authorization", "bearer old", indexed: true)
        headers.add("apns-expiration", "0")

        headers.set("authorization", "bearer new")
        #expect(headers.count == 3)
        #expect(headers[1].name.description == "authorization" && headers[1].value == "bearer new")
        #expect(headers[1].indexed, "a replaced value keeps its field's indexing")
        #expect(headers.value(of: "apns-request-id") == "request-1" && headers.value(of: "apns-expiration") == "0")

        headers.set("apns-priority", "10", indexed: true)
        #expect(headers.count == 4)
        #expect(headers[3].name.description == "apns-priority" && headers[3].value == "10" && headers[3].indexed)
    }
}
