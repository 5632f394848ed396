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
        let version = try reader.byte()
        guard version == Self.version else { throw reader.damaged("forwarded request version \(version) is not known") }
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
        let version = try reader.byte()
        guard version == Self.version else { throw reader.damaged("forwarded response version \(version) is not known") }
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
