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
                let response = try sendRetryingWhileMoving(client, "POST", "/v1/channels", body: request)
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

/// Sends a request again while a cluster answers 503 `channel_moving` (its partition is changing
/// hands: nothing was done), every 0.2 s for 10 s at most, as a provider's client following
/// `Retry-After` would; any other answer is returned.
func sendRetryingWhileMoving(_ client: HTTPLoadClient, _ method: String, _ path: String, body: [UInt8] = []) throws -> HTTPLoadClient.Response {
    var response = try client.send(method, path, body: body)
    for _ in 0..<50 where response.status == 503 && response.text.contains("channel_moving") {
        Thread.sleep(forTimeInterval: 0.2)
        response = try client.send(method, path, body: body)
    }
    return response
}
