import TouchlineCore

/// Payloads the scenarios and their h2load ceilings send.
enum LoadPayloads {
    /// A Live Activity update of about `bytes` bytes (the score state padded with a commentary line).
    static func update(bytes: Int) -> [UInt8] {
        func build(_ padding: Int) -> [UInt8] {
            LiveActivityPayload(timestamp: SystemClock().now(), event: .update,
                                contentState: .object([.init("home", .integer(2)), .init("away", .integer(1)),
                                                       .init("clock", .integer(4020)), .init("period", .string("2H")),
                                                       .init("lastEvent", .string(String(repeating: "x", count: padding)))]),
                                staleDate: SystemClock().now() + .seconds(900), relevanceScore: 50).encoded()
        }
        let base = build(0).count
        return build(max(0, bytes - base))
    }
}
