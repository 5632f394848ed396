import Testing
@testable import Touchline
@testable import TouchlineCluster
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A forwarded answer larger than one NATS message (a feed export) is cut in parts and read
/// back whole; one that fits goes as before (version 1), so gateways of the previous build read it.
struct ForwardedResponsePartsTests {
    static func response(bodySize: Int) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "application/x-ndjson")],
                     body: (0..<bodySize).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    }

    @Test func aLargeAnswerIsCutInPartsNoneOverTheLimitAndReadBackWhole() throws {
        let answer = ForwardedResponse(Self.response(bodySize: 10_000))
        let parts = answer.parts(maximumSize: 1_024)
        #expect(parts.count == 11 && parts.allSatisfy { $0.count <= 1_024 }, "\(parts.map(\.count))")
        #expect(ForwardedResponse.partCount(ofFirst: parts[0]) == parts.count)
        let read = try ForwardedResponse(decodingParts: parts).response
        #expect(read.status == 200 && read.body == answer.response.body && read.headers.map(\.value) == ["application/x-ndjson"])
        // Missing a part, or reordered, is refused or misread never silently.
        #expect(throws: BinaryRecordReader.Damaged.self) { try ForwardedResponse(decodingParts: Array(parts.dropLast())) }
    }

    @Test func anAnswerThatFitsTravelsAsOneVersionOneMessage() throws {
        let answer = ForwardedResponse(Self.response(bodySize: 500))
        let parts = answer.parts(maximumSize: 1_024)
        #expect(parts == [answer.encoded] && parts[0].first == ForwardedResponse.version)
        #expect(ForwardedResponse.partCount(ofFirst: parts[0]) == 1)
        #expect(try ForwardedResponse(decodingParts: parts).response.body == answer.response.body)
    }

    @Test func anAnswerOverTheMostPartsBecomesA502NamingItsSize() throws {
        let parts = ForwardedResponse(Self.response(bodySize: 300_000)).parts(maximumSize: 256)
        #expect(parts.count == 1)
        let refused = try ForwardedResponse(decodingParts: parts).response
        #expect(refused.status == 502 && String(decoding: refused.body, as: UTF8.self).contains("answer_too_large"))
    }
}
