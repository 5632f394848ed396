import TouchlineCore

extension HTTPLoadClient {
    /// Every item of a paged list of the provider API (`GET /v1/channels`, `/v1/deadletters`):
    /// pages of 1,000 under `member`, each next one asked for with the answer's `next` as `after`.
    func allPages(_ path: String, member: String) throws -> [JSONValue] {
        var items: [JSONValue] = []
        var after: String?
        repeat {
            let response = try send("GET", path + "?limit=1000" + (after.map { "&after=\($0)" } ?? ""))
            guard response.status == 200, case .array(let page)? = response.json?[member: member] else {
                throw LoadError("GET \(path) answered \(response.status): \(response.text.prefix(200))")
            }
            items += page
            // A channel id, or a dead letter's number.
            after = switch response.json?[member: "next"] {
            case .string(let next)?: next
            case .integer(let next)?: String(next)
            default: nil
            }
        } while after != nil
        return items
    }
}
