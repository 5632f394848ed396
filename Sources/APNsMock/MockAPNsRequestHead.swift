import HTTP2

/// The request headers APNs cares about, read from the header block in one pass.
///
/// Any of them sent twice is remembered so the request can be refused with `DuplicateHeaders`.
/// The long values that are only compared (path, topic, authorization) stay bytes in the block.
struct MockAPNsRequestHead {
    let headers: HTTP2HeaderBlock
    var method = ""
    private var pathIndex: Int?
    /// Index of the `authorization` field in the block (its value is compared as bytes).
    var authorizationIndex: Int?
    private var topicIndex: Int?
    var pushType: String?
    var priority: String?
    var expiration: String?
    var apnsID: String?
    var collapseID: String?
    var channelID: String?
    var requestID: String?
    /// The name of the first APNs header that appeared more than once.
    var duplicate: String?

    init(_ block: HTTP2HeaderBlock) {
        headers = block
        // Dispatch on the name length first: most fields then need one comparison or none.
        for i in 0..<block.count {
            switch block.nameLength(at: i) {
            case 5 where block.nameEquals(at: i, ":path"):
                pathIndex = i
            case 7 where block.nameEquals(at: i, ":method"):
                method = block.value(at: i)
            case 7 where block.nameEquals(at: i, "apns-id"):
                apnsID = take(apnsID, block, i, "apns-id")
            case 10 where block.nameEquals(at: i, "apns-topic"):
                if topicIndex != nil { noteDuplicate("apns-topic") }
                topicIndex = i
            case 13 where block.nameEquals(at: i, "authorization"):
                if authorizationIndex != nil { noteDuplicate("authorization") }
                authorizationIndex = i
            case 13 where block.nameEquals(at: i, "apns-priority"):
                priority = take(priority, block, i, "apns-priority")
            case 14 where block.nameEquals(at: i, "apns-push-type"):
                pushType = take(pushType, block, i, "apns-push-type")
            case 15 where block.nameEquals(at: i, "apns-expiration"):
                expiration = take(expiration, block, i, "apns-expiration")
            case 15 where block.nameEquals(at: i, "apns-channel-id"):
                channelID = take(channelID, block, i, "apns-channel-id")
            case 15 where block.nameEquals(at: i, "apns-request-id"):
                requestID = take(requestID, block, i, "apns-request-id")
            case 16 where block.nameEquals(at: i, "apns-collapse-id"):
                collapseID = take(collapseID, block, i, "apns-collapse-id")
            default:
                break
            }
        }
    }

    /// The `:path` as bytes (empty when absent).
    var pathBytes: UnsafeRawBufferPointer {
        pathIndex.map { headers.valueBytes(at: $0) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// The `:path` as text, for messages.
    var path: String { String(decoding: pathBytes, as: UTF8.self) }

    /// The `apns-topic`, if sent.
    var topic: String? { topicIndex.map { headers.value(at: $0) } }

    /// True when `apns-topic` was sent and equals `expected` (compared as bytes).
    func topicEquals(_ expected: String) -> Bool {
        guard let topicIndex else { return false }
        let value = headers.valueBytes(at: topicIndex)
        var expected = expected
        return expected.withUTF8 { $0.count == value.count && ($0.isEmpty || memcmp($0.baseAddress!, value.baseAddress!, value.count) == 0) }
    }

    private mutating func take(_ current: String?, _ block: HTTP2HeaderBlock, _ index: Int, _ name: String) -> String {
        if current != nil { noteDuplicate(name) }
        return block.value(at: index)
    }

    private mutating func noteDuplicate(_ name: String) {
        if duplicate == nil { duplicate = name }
    }
}

#if canImport(Glibc)
import Glibc
#endif
