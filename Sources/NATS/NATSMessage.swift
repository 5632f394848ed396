import CNATS
import Glibc

/// A message received from NATS, copied out of the client's buffer so that it can cross to the
/// loop that handles it (the client's `natsMsg` is destroyed on the client's thread).
public struct NATSMessage: Sendable, Equatable {
    public var subject: String
    /// Where an answer goes (request-reply), or the acknowledgement subject of a JetStream delivery.
    public var reply: String?
    public var payload: [UInt8]
    public var headers: [String: String]
    /// Where the message sits in its stream, for messages a JetStream consumer delivered.
    public var stream: StreamPosition?

    /// A stored message's place: its stream sequence is also its revision in a key-value bucket.
    public struct StreamPosition: Sendable, Equatable {
        public var stream: String
        public var sequence: UInt64
        /// Messages still to deliver after this one when it was sent (0: the consumer is caught up).
        public var pending: UInt64
        /// When the stream stored it, in nanoseconds since 1970 (the server's clock).
        public var timestampNanoseconds: Int64

        public init(stream: String, sequence: UInt64, pending: UInt64, timestampNanoseconds: Int64) {
            self.stream = stream
            self.sequence = sequence
            self.pending = pending
            self.timestampNanoseconds = timestampNanoseconds
        }
    }

    public init(subject: String, reply: String? = nil, payload: [UInt8], headers: [String: String] = [:],
                stream: StreamPosition? = nil) {
        self.subject = subject
        self.reply = reply
        self.payload = payload
        self.headers = headers
        self.stream = stream
    }

    /// Copies `message` (which the caller still owns and destroys).
    init(copying message: OpaquePointer, jetStream: Bool) {
        subject = String(cString: natsMsg_GetSubject(message))
        reply = natsMsg_GetReply(message).map { String(cString: $0) }
        let length = Int(natsMsg_GetDataLength(message))
        if length > 0, let data = natsMsg_GetData(message) {
            payload = data.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
        } else {
            payload = []
        }
        headers = Self.headers(of: message)
        stream = jetStream ? Self.position(of: message) : nil
    }

    private static func headers(of message: OpaquePointer) -> [String: String] {
        var keys: UnsafeMutablePointer<UnsafePointer<CChar>?>?
        var count: Int32 = 0
        guard natsMsgHeader_Keys(message, &keys, &count) == NATS_OK, let keys else { return [:] }
        defer { free(keys) }
        var headers: [String: String] = [:]
        for index in 0..<Int(count) {
            guard let key = keys[index] else { continue }
            var value: UnsafePointer<CChar>?
            if natsMsgHeader_Get(message, key, &value) == NATS_OK, let value {
                headers[String(cString: key)] = String(cString: value)
            }
        }
        return headers
    }

    private static func position(of message: OpaquePointer) -> StreamPosition? {
        var metadata: UnsafeMutablePointer<jsMsgMetaData>?
        guard natsMsg_GetMetaData(&metadata, message) == NATS_OK, let metadata else { return nil }
        defer { jsMsgMetaData_Destroy(metadata) }
        return StreamPosition(stream: metadata.pointee.Stream.map { String(cString: $0) } ?? "",
                              sequence: metadata.pointee.Sequence.Stream, pending: metadata.pointee.NumPending,
                              timestampNanoseconds: metadata.pointee.Timestamp)
    }
}
