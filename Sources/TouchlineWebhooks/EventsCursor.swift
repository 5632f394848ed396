/// Where a `GET /v1/events` reader stands in the two outboxes: the last event id it has seen
/// in each file. Shown as `<channels>-<personal>` (opaque to clients: they only hand back `next`).
struct EventsCursor: Sendable, Equatable {
    var positions: [Int64]

    static let start = EventsCursor(positions: [0, 0])

    init(positions: [Int64]) { self.positions = positions }

    /// Parses a cursor given back by a client; nil when it is not one.
    init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, text.utf8.count <= 41,
              let positions = Optional(parts.compactMap { $0.allSatisfy(\.isASCII) ? Int64($0) : nil }), positions.count == 2,
              positions.allSatisfy({ $0 >= 0 }) else { return nil }
        self.positions = positions
    }

    var text: String { positions.map(String.init).joined(separator: "-") }
}
