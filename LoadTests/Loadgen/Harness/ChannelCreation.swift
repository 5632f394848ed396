import Foundation
import TouchlineCore

/// Creates channels through the provider API, several connections at a time.
enum ChannelCreation {
    /// Lets a push through every 0.25 s with a burst of 3: paced events at 2/s never wait for a
    /// token, so latency figures measure the path and not the pacing.
    static let unthrottledPolicy = #"{"minimumIntervalSeconds":0.25,"burst":3}"#

    /// Creates `ids` as no-storage channels with `policy` (the gateway's default when nil), each
    /// body from `body` when given; returns each channel's APNs channel id.
    @discardableResult
    static func create(_ ids: [String], policy: String? = nil, connections: Int = 8,
                       body: (@Sendable (String) -> [UInt8])? = nil,
                       connect: @escaping @Sendable () throws -> HTTPLoadClient) throws -> [String: String] {
        let threads = min(connections, max(1, ids.count))
        let created = try onThreads(threads) { index in
            let client = try connect()
            var apnsIDs: [(String, String)] = []
            for id in stride(from: index, to: ids.count, by: threads).map({ ids[$0] }) {
                let request = body?(id) ?? Array((#"{"id":"\#(id)","storagePolicy":"no-storage""# + (policy.map { #","policy":\#($0)"# } ?? "") + "}").utf8)
                let response = try client.send("POST", "/v1/channels", body: request)
                guard response.status == 200 || response.status == 201, let reply = try? JSONParser.parse(response.body),
                      case .string(let apnsID)? = reply[member: "apnsChannelId"] else {
                    throw LoadError("creating channel \(id) answered \(response.status): \(response.text)")
                }
                apnsIDs.append((id, apnsID))
            }
            return apnsIDs
        }
        return Dictionary(uniqueKeysWithValues: created.joined().map { ($0.0, $0.1) })
    }
}
