import TouchlineRuntime
import TouchlineStore

/// A provider request handed by the gateway that received it to the gateway that owns its
/// channel's partition, over NATS request-reply (docs/cluster.md, "Ingest on any instance"); the
/// owner routes it as its own and sends back a ``ForwardedResponse``.
///
/// The bytes are versioned and read defensively (``BinaryRecordReader``): the two gateways may
/// run different builds during a rolling upgrade, and a message that cannot be read is answered
/// 502 naming the problem, never trusted.
struct ForwardedRequest: Equatable {
    static let version: UInt8 = 1
    /// The header fields the owner's routes read; no others travel.
    static let carriedHeaders = ["Authorization", "Idempotency-Key", "Content-Type"]

    var method: HTTPMethod
    /// Path and query as the provider sent them.
    var target: String
    var headers: [HTTPHeaderField]
    var body: [UInt8]

    init(method: HTTPMethod, target: String, headers: [HTTPHeaderField], body: [UInt8]) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    init(of request: HTTPRequest) {
        self.init(method: request.method, target: request.head.target,
                  headers: request.head.fields.filter { field in Self.carriedHeaders.contains { $0.lowercased() == field.name.lowercased() } },
                  body: request.body)
    }

    var encoded: [UInt8] {
        var writer = BinaryRecordWriter()
        writer.byte(Self.version)
        writer.string(method.rawValue)
        writer.string(target)
        writer.unsigned(UInt64(headers.count))
        for field in headers {
            writer.string(field.name)
            writer.string(field.value)
        }
        writer.data(body)
        return writer.bytes
    }

    init(decoding bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        try reader.version(Self.version, of: "forwarded request")
        let name = try reader.string()
        guard let method = HTTPMethod(rawValue: name) else { throw reader.damaged("method \(name) is not known") }
        let target = try reader.string()
        var headers: [HTTPHeaderField] = []
        for _ in 0..<(try reader.count()) {
            headers.append(HTTPHeaderField(name: try reader.string(), value: try reader.string()))
        }
        let body = try reader.data()
        guard reader.isAtEnd else { throw reader.damaged("bytes after the body") }
        self.init(method: method, target: target, headers: headers, body: body)
    }

    /// The request for the owner's router; `answer` gets its response on `loop`.
    func request(on loop: EventLoop, answer: @escaping (HTTPResponse) -> Void) -> HTTPRequest {
        HTTPRequest(method: method, target: target, headers: headers, body: body, loop: loop, answer: answer)
    }
}

/// The owner's answer to a ``ForwardedRequest``: what the receiving gateway sends the provider.
struct ForwardedResponse {
    static let version: UInt8 = 1

    var response: HTTPResponse

    var encoded: [UInt8] {
        var writer = BinaryRecordWriter()
        writer.byte(Self.version)
        writer.unsigned(UInt64(response.status))
        writer.unsigned(UInt64(response.headers.count))
        for header in response.headers {
            writer.string(header.name)
            writer.string(header.value)
        }
        writer.data(response.body)
        return writer.bytes
    }

    init(_ response: HTTPResponse) { self.response = response }

    init(decoding bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        try reader.version(Self.version, of: "forwarded response")
        let status = try reader.unsigned()
        guard (100...599).contains(status) else { throw reader.damaged("status \(status) is not an HTTP status") }
        var headers: [(name: String, value: String)] = []
        for _ in 0..<(try reader.count()) {
            headers.append((try reader.string(), try reader.string()))
        }
        let body = try reader.data()
        guard reader.isAtEnd else { throw reader.damaged("bytes after the body") }
        response = HTTPResponse(status: Int(status), headers: headers, body: body)
    }
}

/// An answer larger than one NATS message (a feed export, say) travels cut in parts: the first
/// message holds version 2 and the number of parts, then the answer's whole encoding
/// (``ForwardedResponse/encoded``) runs across all of them, in order.
extension ForwardedResponse {
    static let partedVersion: UInt8 = 2
    /// Most parts an answer is cut in: with the servers' default 1 MiB messages, about 1 GiB.
    static let maximumParts = 1_024
    /// Room left in each part for the NATS message's own framing.
    static let partMargin = 64

    /// The messages that carry this answer, each at most `maximumSize` bytes: one when it fits.
    /// An answer that would need more than ``maximumParts`` is replaced by a 502 naming its size.
    func parts(maximumSize: Int) -> [[UInt8]] {
        let whole = encoded
        // Not known (no connection): the servers' default.
        let maximumSize = maximumSize > Self.partMargin * 2 ? maximumSize : 1 << 20
        guard whole.count > maximumSize else { return [whole] }
        let size = maximumSize - Self.partMargin
        let count = (whole.count + size - 1) / size
        guard count <= Self.maximumParts else {
            let refused = HTTPError(status: 502, code: "answer_too_large",
                                    message: "the owner's answer is \(whole.count) bytes, more than \(Self.maximumParts) messages of \(size)")
            return [ForwardedResponse(refused.response).encoded]
        }
        var parts = stride(from: 0, to: whole.count, by: size).map { Array(whole[$0..<min($0 + size, whole.count)]) }
        parts[0] = Self.partsHeader(count: count) + parts[0]
        return parts
    }

    /// How many messages make the answer whose first message is `first` (1 unless it says more).
    static func partCount(ofFirst first: [UInt8]) -> Int {
        var reader = BinaryRecordReader(first)
        guard (try? reader.byte()) == partedVersion, let count = try? reader.unsigned(), (1...UInt64(maximumParts)).contains(count) else {
            return 1
        }
        return Int(count)
    }

    /// Reads an answer from all its messages, in order.
    init(decodingParts parts: [[UInt8]]) throws(BinaryRecordReader.Damaged) {
        guard let first = parts.first, first.first == Self.partedVersion else {
            try self.init(decoding: parts.first ?? [])
            return
        }
        let count = Self.partCount(ofFirst: first)
        guard parts.count == count else {
            throw BinaryRecordReader(first).damaged("an answer of \(count) parts arrived as \(parts.count)")
        }
        let header = Self.partsHeader(count: count)
        try self.init(decoding: Array(first.dropFirst(header.count)) + parts.dropFirst().flatMap { $0 })
    }

    private static func partsHeader(count: Int) -> [UInt8] {
        var writer = BinaryRecordWriter()
        writer.byte(partedVersion)
        writer.unsigned(UInt64(count))
        return writer.bytes
    }
}
