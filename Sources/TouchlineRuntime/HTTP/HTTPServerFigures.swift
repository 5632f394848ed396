/// What an ``HTTPServer`` holds and has refused, for the gateway's `/metrics`: read on the
/// server's loop (``HTTPServer/figures``), counters since the server started.
public struct HTTPServerFigures: Sendable, Equatable {
    /// Connections open in the general pool and in the probes' reserve.
    public var generalConnections = 0
    public var probeConnections = 0
    /// Connections refused, by the code of their answer: `too_many_connections` (at accept, or a
    /// request other than a probe on a connection of the probes' reserve) and
    /// `too_many_connections_from_address` (at accept).
    public var connectionsRefused: [String: Int] = [:]
    /// Connections closed because no complete request head came within
    /// ``HTTPConnectionLimits/firstRequestTimeout`` of their accept.
    public var firstRequestTimeouts = 0
    /// Probe connections closed to give their slot to a newer one (before their head was
    /// complete, or after their answer).
    public var probeSlotsReclaimed = 0
    /// Request body bytes held now, by owner (see ``HTTPAdmission``); bodies without one are
    /// only in the total.
    public var bufferedBodyBytes = 0
    public var bufferedBodyBytesByOwner: [Int: Int] = [:]
    /// Bodies refused for the budget, by the code of their answer (`server_busy`,
    /// `key_body_budget_full`) and owner (nil: a body without one).
    public var bodyRefusals: [BodyRefusal: Int] = [:]

    public struct BodyRefusal: Hashable, Sendable {
        public var code: String
        public var owner: Int?

        public init(code: String, owner: Int?) {
            self.code = code
            self.owner = owner
        }
    }

    public init() {}
}
