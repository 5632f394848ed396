import TouchlineChannels
import TouchlineCore
import TouchlineStore
import TouchlineWebhooks

/// Where a reader of a listing gathered from many sources stands on a cluster: the last id it
/// has seen in each. For `GET /v1/events`, one per partition (`p<partition>`: the events its log
/// recorded) and one per gateway (`m<instance>`: its own personal file's); for
/// `GET /v1/deadletters`, one per gateway. Shown as `c~p3.1f~mg1.7` (ids in base 36; sources
/// still at their start left out), opaque to clients, which only hand `next` back. Bounded: at
/// most ``maximumSources`` entries and ``maximumLength`` characters.
struct ClusterCursor: Sendable, Equatable {
    var positions: [String: Int64]

    static let start = ClusterCursor(positions: [:])
    /// Partitions (1,024 at most) and gateways.
    static let maximumSources = 2_048
    static let maximumLength = 32_768

    init(positions: [String: Int64]) { self.positions = positions }

    /// Parses a cursor given back by a client; nil when it is not one.
    init?(_ text: String) {
        guard text.utf8.count <= Self.maximumLength, text.first == "c" else { return nil }
        let entries = text.split(separator: "~", omittingEmptySubsequences: false).dropFirst()
        guard text == "c" || text.hasPrefix("c~"), entries.count <= Self.maximumSources else { return nil }
        var positions: [String: Int64] = [:]
        for entry in entries {
            let parts = entry.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let key = Self.key(parts[0]), let position = Int64(parts[1], radix: 36), position > 0,
                  positions.updateValue(position, forKey: key) == nil else { return nil }
        }
        self.positions = positions
    }

    var text: String {
        (["c"] + positions.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key).\(String($0.value, radix: 36))" })
            .joined(separator: "~")
    }

    /// The key of partition `partition`'s outbox.
    static func partition(_ partition: Int) -> String { "p\(partition)" }
    /// The key of gateway `instance`'s personal outbox.
    static func member(_ instance: InstanceID) -> String { "m\(instance)" }

    /// `p` and digits, or `m` and an instance name.
    private static func key(_ text: Substring) -> String? {
        guard let kind = text.first else { return nil }
        let rest = text.dropFirst()
        switch kind {
        case "p": return !rest.isEmpty && rest.count <= 4 && rest.allSatisfy(\.isASCII) && Int(rest) != nil ? String(text) : nil
        case "m": return InstanceID(String(rest)) != nil ? String(text) : nil
        default: return nil
        }
    }

    subscript(key: String) -> Int64 { positions[key] ?? 0 }

    /// The page ``TimeOrderedMerge`` makes of the sources' pages (each source's items after its
    /// position), and the cursor past it (each source at its last item's `position`).
    func merging<Item, Time: Comparable>(_ pages: [String: [Item]], limit: Int, position: (Item) -> Int64,
                                          time: (Item) -> Time) -> (items: [Item], next: ClusterCursor) {
        let (items, last) = TimeOrderedMerge.merge(pages, limit: limit, time: time)
        var next = self
        for (source, item) in last { next.positions[source] = position(item) }
        return (items, next)
    }

    /// ``merging(_:limit:position:time:)`` for webhook events, by creation time.
    func merging(_ pages: [String: [StoredWebhookEvent]], limit: Int) -> (events: [StoredWebhookEvent], next: ClusterCursor) {
        let (events, next) = merging(pages, limit: limit, position: \.id, time: \.createdAt)
        return (events, next)
    }
}
