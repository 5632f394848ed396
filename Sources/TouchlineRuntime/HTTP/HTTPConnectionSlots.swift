/// Which connections an ``HTTPServer`` takes and in which pool: the rules behind
/// ``HTTPConnectionLimits/maxConnections``, ``HTTPConnectionLimits/maxConnectionsPerAddress`` and
/// ``HTTPConnectionLimits/probeConnections``. Pure (no sockets, no clock): the server reports
/// accepts, heads and closes by connection id, and does what the answer says.
///
/// - The first `maxConnections` connections open at once are *general*: they serve anything.
/// - Beyond them, up to `probeConnections` more are *probe* connections, which serve only the
///   health and readiness probes (one request, then close): a load balancer still sees how the
///   gateway is while silent or idle clients fill its port. When every probe slot is taken too,
///   the oldest probe connection that is not being answered (no complete head yet, or answered
///   already and closing) gives its slot to the newcomer. A probe's head follows its connect
///   within a round trip, so connections that say nothing, or that take their answer and stay,
///   cannot keep a probe out, however fast they come back.
/// - One client (``PeerAddress/client``) holds at most `maxConnectionsPerAddress` of them, general
///   and probe together, so filling the port takes many addresses, not one.
public struct HTTPConnectionSlots: Sendable {
    public enum Pool: Sendable, Equatable { case general, probe }

    public enum Refusal: Sendable, Equatable {
        /// Every general and probe slot is taken (and no probe slot can be given up).
        case serverFull
        /// The client already holds `maxConnectionsPerAddress` connections.
        case addressFull
    }

    public enum Decision: Sendable, Equatable {
        case general
        /// A probe slot; `evicting` names the waiting probe connection whose slot it takes, which
        /// the caller closes (its slot is already counted as free).
        case probe(evicting: UInt64?)
        case refused(Refusal)
    }

    public let maxConnections: Int
    public let maxPerAddress: Int
    public let probeSlots: Int
    /// General connections open now.
    public private(set) var general = 0
    /// Probe connections open now.
    public private(set) var probes = 0
    private var byClient: [PeerAddress: Int] = [:]
    private var entries: [UInt64: (client: PeerAddress?, pool: Pool)] = [:]
    /// Probe connections whose slot may be given up (no complete head yet, or answered), oldest
    /// first (at most `probeSlots`).
    private var evictable: [UInt64] = []

    public init(maxConnections: Int, maxPerAddress: Int, probeSlots: Int) {
        self.maxConnections = maxConnections
        self.maxPerAddress = maxPerAddress
        self.probeSlots = probeSlots
    }

    /// Connections `client` holds now.
    public func connections(of client: PeerAddress) -> Int { byClient[client.client] ?? 0 }

    /// Where the connection `id` (new, increasing with each accept) from `address` goes; nil
    /// address: one the server cannot tell, counted only in the totals.
    public mutating func admit(id: UInt64, from address: PeerAddress?) -> Decision {
        let client = address?.client
        if let client, byClient[client, default: 0] >= maxPerAddress { return .refused(.addressFull) }
        let decision: Decision
        if general < maxConnections {
            general += 1
            decision = .general
        } else if probes < probeSlots {
            probes += 1
            evictable.append(id)
            decision = .probe(evicting: nil)
        } else if !evictable.isEmpty {
            let evicted = evictable.removeFirst()
            forget(evicted)
            probes += 1
            evictable.append(id)
            decision = .probe(evicting: evicted)
        } else {
            return .refused(.serverFull)
        }
        entries[id] = (client, decision == .general ? .general : .probe)
        if let client { byClient[client, default: 0] += 1 }
        return decision
    }

    /// The connection `id` has read a complete head: a probe connection's slot is not given up
    /// for a newcomer while its request is answered.
    public mutating func headReceived(id: UInt64) {
        if let index = evictable.firstIndex(of: id) { evictable.remove(at: index) }
    }

    /// The connection `id` has its answer and is closing: a probe connection's slot may go to a
    /// newcomer again.
    public mutating func answered(id: UInt64) {
        guard entries[id]?.pool == .probe, !evictable.contains(id) else { return }
        evictable.append(id)
    }

    /// The connection `id` closed (nothing happens for an id already evicted or never admitted).
    public mutating func release(id: UInt64) {
        if let index = evictable.firstIndex(of: id) { evictable.remove(at: index) }
        forget(id)
    }

    private mutating func forget(_ id: UInt64) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        switch entry.pool {
        case .general: general -= 1
        case .probe: probes -= 1
        }
        if let client = entry.client {
            let left = byClient[client, default: 1] - 1
            byClient[client] = left > 0 ? left : nil
        }
    }
}
