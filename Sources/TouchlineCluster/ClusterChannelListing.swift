import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// One page of `GET /v1/channels` on a cluster, merged from every gateway's own page: each
/// gateway lists the channels of the partitions it serves (`after`, `limit` and the caller's
/// scope applied there), and the first `limit` channels of the union, by id, are the page. Each
/// gateway's page holds its first `limit` channels after the cursor, so the union's first
/// `limit` are among them: nothing is skipped, whatever the spread.
struct ClusterChannelListing {
    let limit: Int
    /// By id: a channel that moved while the pages were gathered may come from two gateways.
    private var channels: [String: JSONValue] = [:]
    /// A gateway had more than `limit` after the cursor.
    private var more = false

    init(limit: Int) { self.limit = limit }

    /// The limit a listing request asks for (its own route has checked it: 1 to 1000, 100 by default).
    init(for request: HTTPRequest) {
        self.init(limit: request.target.queryValue("limit").flatMap { Int($0) } ?? 100)
    }

    /// Adds one gateway's answer; false when it is not a page (the caller answers 502).
    mutating func add(_ response: HTTPResponse) -> Bool {
        guard response.status == 200, let page = try? JSONParser.parse(response.body),
              case .array(let listed)? = page[member: "channels"] else { return false }
        for channel in listed {
            guard case .string(let id)? = channel[member: "id"] else { return false }
            channels[id] = channel
        }
        if page[member: "next"] != nil { more = true }
        return true
    }

    /// The merged page, with `next` when any gateway has more.
    var response: HTTPResponse {
        let ids = channels.keys.sorted()
        let page = ids.prefix(limit)
        var members = [JSONValue.Member("channels", .array(page.compactMap { channels[$0] }))]
        if ids.count > limit || more, let last = page.last { members.append(.init("next", .string(last))) }
        return .json(status: 200, .object(members))
    }
}
