#if canImport(FoundationEssentials)
import TouchlineCore
import FoundationEssentials
#else
import Foundation
#endif
import HTTP2

/// The identifiers of a successful APNs answer, read from its headers when asked for: most
/// answers (a kickoff's push-to-start) are never read, and their ids are not made into strings.
public struct APNsResponse: Sendable, Equatable {
    public var status: Int
    private var headers: HTTP2ResponseHeaders

    public init(status: Int, apnsID: String? = nil, requestID: String? = nil, uniqueID: String? = nil, channelID: String? = nil) {
        let named = [("apns-id", apnsID), ("apns-request-id", requestID), ("apns-unique-id", uniqueID), ("apns-channel-id", channelID)]
        self.status = status
        headers = HTTP2ResponseHeaders(named.compactMap { name, value in value.map { HTTP2Header(name, $0) } })
    }

    public init(_ response: HTTP2Response) {
        status = response.status
        headers = response.receivedHeaders
    }

    /// `apns-id` (device pushes): the id sent, or one APNs made up.
    public var apnsID: String? { headers.value(of: "apns-id") }
    /// `apns-request-id` (broadcast and channel management).
    public var requestID: String? { headers.value(of: "apns-request-id") }
    /// `apns-unique-id`: the server's message id (broadcast; device pushes in sandbox only).
    public var uniqueID: String? { headers.value(of: "apns-unique-id") }
    /// `apns-channel-id` (channel creation).
    public var channelID: String? { headers.value(of: "apns-channel-id") }

    /// Equal when the status and the four ids are: other headers do not count.
    public static func == (lhs: APNsResponse, rhs: APNsResponse) -> Bool {
        lhs.status == rhs.status && lhs.apnsID == rhs.apnsID && lhs.requestID == rhs.requestID && lhs.uniqueID == rhs.uniqueID
            && lhs.channelID == rhs.channelID
    }
}

/// A channel's configuration as APNs reports it (read channel).
public struct APNsChannelConfiguration: Sendable, Equatable {
    public var channelID: String
    public var storagePolicy: ChannelStorage
    /// `push-type`, `"LiveActivity"` for every channel today.
    public var pushType: String

    public init(channelID: String, storagePolicy: ChannelStorage, pushType: String) {
        self.channelID = channelID
        self.storagePolicy = storagePolicy
        self.pushType = pushType
    }
}

/// `{"reason": "...", "timestamp": 1700000000000}`: both optional, anything else ignored.
struct APNsErrorBody {
    var reason: String?
    var timestamp: Int64?

    init(_ bytes: [UInt8]) {
        struct Wire: Decodable {
            var reason: String?
            var timestamp: Int64?
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                reason = try? container.decodeIfPresent(String.self, forKey: .reason)
                timestamp = (try? container.decodeIfPresent(Int64.self, forKey: .timestamp))
                    ?? (try? container.decodeIfPresent(Double.self, forKey: .timestamp)).flatMap { $0.map { Int64($0) } }
            }
            enum CodingKeys: String, CodingKey { case reason, timestamp }
        }
        let wire = bytes.isEmpty ? nil : try? JSONDecoder().decode(Wire.self, from: Data(bytes))
        reason = wire?.reason
        timestamp = wire?.timestamp
    }
}

/// Parsers for the JSON bodies of channel-management answers; nil when the body does not fit.
enum ChannelBodies {
    private struct Configuration: Decodable {
        var messageStoragePolicy: Int
        var pushType: String?
        enum CodingKeys: String, CodingKey {
            case messageStoragePolicy = "message-storage-policy"
            case pushType = "push-type"
        }
    }

    private struct List: Decodable {
        var channels: [String]
    }

    static func configuration(_ bytes: [UInt8], channelID: String) -> APNsChannelConfiguration? {
        guard let wire = try? JSONDecoder().decode(Configuration.self, from: Data(bytes)),
              let policy = ChannelStorage(messageStoragePolicy: wire.messageStoragePolicy) else { return nil }
        return APNsChannelConfiguration(channelID: channelID, storagePolicy: policy, pushType: wire.pushType ?? "LiveActivity")
    }

    /// Apple's prose also calls this body empty, so an empty body means no channels.
    static func channelIDs(_ bytes: [UInt8]) -> [String]? {
        if bytes.isEmpty { return [] }
        return try? JSONDecoder().decode(List.self, from: Data(bytes)).channels
    }
}
