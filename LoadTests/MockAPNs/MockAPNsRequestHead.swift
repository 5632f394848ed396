import HTTP2

/// The request headers APNs cares about, read from the header block in one pass.
///
/// Any of them sent twice is remembered so the request can be refused with `DuplicateHeaders`.
struct MockAPNsRequestHead {
    var method = ""
    var path = ""
    /// Index of the `authorization` field in the block (its value is compared as bytes).
    var authorizationIndex: Int?
    var pushType: String?
    var topic: String?
    var priority: String?
    var expiration: String?
    var apnsID: String?
    var collapseID: String?
    var channelID: String?
    var requestID: String?
    /// The name of the first APNs header that appeared more than once.
    var duplicate: String?

    init(_ block: HTTP2HeaderBlock) {
        // Dispatch on the name length first: most fields then need one comparison or none.
        for i in 0..<block.count {
            switch block.nameLength(at: i) {
            case 5 where block.nameEquals(at: i, ":path"):
                path = block.value(at: i)
            case 7 where block.nameEquals(at: i, ":method"):
                method = block.value(at: i)
            case 7 where block.nameEquals(at: i, "apns-id"):
                apnsID = take(apnsID, block, i, "apns-id")
            case 10 where block.nameEquals(at: i, "apns-topic"):
                topic = take(topic, block, i, "apns-topic")
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

    private mutating func take(_ current: String?, _ block: HTTP2HeaderBlock, _ index: Int, _ name: String) -> String {
        if current != nil { noteDuplicate(name) }
        return block.value(at: index)
    }

    private mutating func noteDuplicate(_ name: String) {
        if duplicate == nil { duplicate = name }
    }
}
