/// Which connections an ``HTTPServer`` takes and in which pool: the rules behind
/// ``HTTPConnectionLimits/maxConnections``, ``HTTPConnectionLimits/maxConnectionsPerAddress`` and
/// ``HTTPConnectionLimits/probeConnections``. Pure (no sockets, no clock): the server reports
/// accepts, heads, answers and closes by connection id, and does what the answer says.
///
/// - The first `maxConnections` connections open at once are *general*: they serve anything.
/// - Beyond them, up to `probeConnections` more are *probe* connections, which serve only the
///   health and readiness probes (one request, then close): a load balancer still sees how the
///   gateway is while silent or idle clients fill its port.
/// - When every probe slot is taken too, a probe connection that is not being answered gives its
///   slot to the newcomer: first one already answered (its client keeps it open), else one still
///   without a complete head from the client that holds the most connections, the oldest of
///   those; never one the caller spares (the server spares one whose request has arrived but is
///   not read yet). A flood comes from clients holding many connections each, a load balancer's
///   probe from one holding one or two, and its head follows its connect within a round trip:
///   connections that say nothing cannot keep a probe out, however fast they come back.
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
        /// A probe slot; `evicting` names the probe connection whose slot it takes, which the
        /// caller closes (its slot is already counted as free).
        case probe(evicting: UInt64?)
        case refused(Refusal)
    }

    private struct Entry {
        var client: PeerAddress?
        var pool: Pool
        var answered = false
    }

    public let maxConnections: Int
    public let maxPerAddress: Int
    public let probeSlots: Int
    /// General connections open now.
    public private(set) var general = 0
    /// Probe connections open now.
    public private(set) var probes = 0
    private var byClient: [PeerAddress: Int] = [:]
    private var entries: [UInt64: Entry] = [:]
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
    /// address: one the server cannot tell, counted only in the totals. `mayEvict` says which
    /// probe connections may give their slot up now.
    public mutating func admit(id: UInt64, from address: PeerAddress?, mayEvict: (UInt64) -> Bool = { _ in true }) -> Decision {
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
        } else if let index = victim(mayEvict) {
            let evicted = evictable.remove(at: index)
            forget(evicted)
            probes += 1
            evictable.append(id)
            decision = .probe(evicting: evicted)
        } else {
            return .refused(.serverFull)
        }
        entries[id] = Entry(client: client, pool: decision == .general ? .general : .probe)
        if let client { byClient[client, default: 0] += 1 }
        return decision
    }

    /// The position in `evictable` of the connection to give up: answered ones first, then the
    /// one whose client holds the most connections; the oldest among equals.
    private func victim(_ mayEvict: (UInt64) -> Bool) -> Int? {
        var best: (index: Int, rank: Int)?
        for (index, id) in evictable.enumerated() where mayEvict(id) {
            guard let entry = entries[id] else { continue }
            let rank = entry.answered ? Int.max : entry.client.map { byClient[$0, default: 0] } ?? 0
            if rank > best?.rank ?? -1 { best = (index, rank) }
        }
        return best?.index
    }

    /// The connection `id` has read a complete head: a probe connection's slot is not given up
    /// for a newcomer while its request is answered.
    public mutating func headReceived(id: UInt64) {
        if let index = evictable.firstIndex(of: id) { evictable.remove(at: index) }
    }

    /// The connection `id` has its answer and is closing: a probe connection's slot may go to a
    /// newcomer again, before any other's.
    public mutating func answered(id: UInt64) {
        guard entries[id]?.pool == .probe else { return }
        entries[id]?.answered = true
        if !evictable.contains(id) { evictable.append(id) }
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
