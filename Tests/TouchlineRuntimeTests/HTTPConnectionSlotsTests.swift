import Testing
import TouchlineRuntime

/// Which connections the server takes: general ones up to the cap, probe ones beyond it (the
/// oldest still silent giving its slot to a newcomer), and never more than its share for one
/// client address.
@Suite struct HTTPConnectionSlotsTests {
    private let one = PeerAddress("192.0.2.1")!
    private let two = PeerAddress("192.0.2.2")!
    private let three = PeerAddress("192.0.2.3")!
    private let four = PeerAddress("192.0.2.4")!

    @Test func generalConnectionsUpToTheCapThenProbesThenRefusals() {
        var slots = HTTPConnectionSlots(maxConnections: 2, maxPerAddress: 100, probeSlots: 1)
        #expect(slots.admit(id: 1, from: one) == .general)
        #expect(slots.admit(id: 2, from: two) == .general)
        #expect(slots.admit(id: 3, from: one) == .probe(evicting: nil))
        slots.headReceived(id: 3)
        // The only probe connection has its head: nothing can give way.
        #expect(slots.admit(id: 4, from: two) == .refused(.serverFull))
        #expect(slots.general == 2 && slots.probes == 1)
        slots.release(id: 1)
        #expect(slots.admit(id: 5, from: two) == .general)
        slots.release(id: 3)
        #expect(slots.admit(id: 6, from: one) == .probe(evicting: nil))
    }

    /// When the reserve is full, the client holding the most connections gives a waiting
    /// connection up (a flood holds many, a load balancer one or two), its oldest first.
    @Test func theBusiestClientsOldestWaitingProbeConnectionGivesWay() {
        var slots = HTTPConnectionSlots(maxConnections: 1, maxPerAddress: 100, probeSlots: 3)
        #expect(slots.admit(id: 1, from: one) == .general)
        #expect(slots.admit(id: 2, from: two) == .probe(evicting: nil))
        #expect(slots.admit(id: 3, from: three) == .probe(evicting: nil))
        #expect(slots.admit(id: 4, from: two) == .probe(evicting: nil))
        // `two` holds two connections, the others one each: its oldest goes.
        #expect(slots.admit(id: 5, from: four) == .probe(evicting: 2))
        // Now every client holds one of the waiting ones: the oldest goes.
        #expect(slots.admit(id: 6, from: four) == .probe(evicting: 3))
        // 4 is being answered; `four` holds 5 and 6.
        slots.headReceived(id: 4)
        #expect(slots.admit(id: 7, from: three) == .probe(evicting: 5))
        #expect(slots.probes == 3)
        // The evicted connections' closes come later and change nothing.
        for id: UInt64 in [2, 3, 5] { slots.release(id: id) }
        #expect(slots.probes == 3 && slots.connections(of: two) == 1 && slots.connections(of: four) == 1 && slots.connections(of: three) == 1)
        // Without a reserve, nothing beyond the cap.
        var none = HTTPConnectionSlots(maxConnections: 1, maxPerAddress: 100, probeSlots: 0)
        #expect(none.admit(id: 1, from: one) == .general)
        #expect(none.admit(id: 2, from: two) == .refused(.serverFull))
    }

    /// A client's general connections count too: the flood that fills the port loses its probe
    /// connections before a newer one from a client holding nothing else.
    @Test func aClientsGeneralConnectionsCountAgainstItsWaitingProbes() {
        var slots = HTTPConnectionSlots(maxConnections: 2, maxPerAddress: 100, probeSlots: 2)
        #expect(slots.admit(id: 1, from: one) == .general)
        #expect(slots.admit(id: 2, from: one) == .general)
        #expect(slots.admit(id: 3, from: two) == .probe(evicting: nil))
        #expect(slots.admit(id: 4, from: one) == .probe(evicting: nil))
        #expect(slots.admit(id: 5, from: three) == .probe(evicting: 4))
        #expect(slots.admit(id: 6, from: one) == .probe(evicting: 3), "two and three hold one each: the oldest goes")
    }

    /// The caller spares a waiting connection whose request has arrived unread: the next oldest
    /// gives way, and when none may, the newcomer is refused.
    @Test func aConnectionTheCallerSparesKeepsItsSlot() {
        var slots = HTTPConnectionSlots(maxConnections: 1, maxPerAddress: 100, probeSlots: 2)
        #expect(slots.admit(id: 1, from: one) == .general)
        #expect(slots.admit(id: 2, from: one) == .probe(evicting: nil))
        #expect(slots.admit(id: 3, from: one) == .probe(evicting: nil))
        #expect(slots.admit(id: 4, from: two, mayEvict: { $0 != 2 }) == .probe(evicting: 3))
        #expect(slots.admit(id: 5, from: two, mayEvict: { $0 == 3 }) == .refused(.serverFull))
        #expect(slots.admit(id: 6, from: two) == .probe(evicting: 2))
    }

    /// A probe connection answered and closing (its client keeping it open, or not reading) has
    /// no more use for its slot: it gives way like a silent one, after those older than it.
    @Test func anAnsweredProbeConnectionGivesWayToo() {
        var slots = HTTPConnectionSlots(maxConnections: 1, maxPerAddress: 100, probeSlots: 2)
        #expect(slots.admit(id: 1, from: one) == .general)
        #expect(slots.admit(id: 2, from: one) == .probe(evicting: nil))
        #expect(slots.admit(id: 3, from: two) == .probe(evicting: nil))
        slots.headReceived(id: 2)
        slots.headReceived(id: 3)
        #expect(slots.admit(id: 4, from: two) == .refused(.serverFull), "both are being answered")
        slots.answered(id: 3)
        slots.answered(id: 3)
        slots.answered(id: 1)
        #expect(slots.admit(id: 5, from: two) == .probe(evicting: 3))
        #expect(slots.admit(id: 6, from: two) == .probe(evicting: 5), "a general connection's answer frees no probe slot")
        // An answered one goes before waiting ones, even of a busier client.
        slots.answered(id: 2)
        #expect(slots.admit(id: 7, from: three) == .probe(evicting: 2))
    }

    @Test func oneAddressHoldsAtMostItsShareOfEveryPoolTogether() {
        var slots = HTTPConnectionSlots(maxConnections: 3, maxPerAddress: 2, probeSlots: 4)
        #expect(slots.admit(id: 1, from: one) == .general)
        #expect(slots.admit(id: 2, from: one) == .general)
        #expect(slots.admit(id: 3, from: one) == .refused(.addressFull))
        #expect(slots.admit(id: 4, from: two) == .general)
        #expect(slots.admit(id: 5, from: two) == .probe(evicting: nil))
        #expect(slots.admit(id: 6, from: two) == .refused(.addressFull), "a probe connection counts for its address too")
        // A connection whose address is unknown counts in the totals only.
        #expect(slots.admit(id: 7, from: nil) == .probe(evicting: nil))
        slots.release(id: 2)
        #expect(slots.connections(of: one) == 1)
        #expect(slots.admit(id: 8, from: one) == .general)
        // An evicted connection's address gets its place back at once.
        var crowded = HTTPConnectionSlots(maxConnections: 0, maxPerAddress: 1, probeSlots: 1)
        #expect(crowded.admit(id: 1, from: one) == .probe(evicting: nil))
        #expect(crowded.admit(id: 2, from: one) == .refused(.addressFull))
        #expect(crowded.admit(id: 3, from: two) == .probe(evicting: 1))
        #expect(crowded.connections(of: one) == 0)
        #expect(crowded.admit(id: 4, from: one) == .probe(evicting: 3))
    }

    @Test func anIPv6ClientIsCountedByItsSlash64() {
        var slots = HTTPConnectionSlots(maxConnections: 10, maxPerAddress: 2, probeSlots: 0)
        #expect(slots.admit(id: 1, from: PeerAddress("2001:db8:1:2::1")) == .general)
        #expect(slots.admit(id: 2, from: PeerAddress("2001:db8:1:2:ffff::9")) == .general)
        #expect(slots.admit(id: 3, from: PeerAddress("2001:db8:1:2::3")) == .refused(.addressFull))
        #expect(slots.admit(id: 4, from: PeerAddress("2001:db8:1:3::1")) == .general, "another /64")
        // IPv4 clients of a dual-stack listener arrive IPv4-mapped: the same client as plain IPv4.
        #expect(slots.admit(id: 5, from: PeerAddress("::ffff:192.0.2.1")) == .general)
        #expect(slots.admit(id: 6, from: one) == .general)
        #expect(slots.admit(id: 7, from: PeerAddress("192.0.2.1")) == .refused(.addressFull))
    }

    @Test func addressesReadAndPrintAsTheyAreCounted() throws {
        let v4 = try #require(PeerAddress("127.0.0.2"))
        #expect(v4.isIPv4 && v4.client == v4 && v4.description == "127.0.0.2")
        #expect(PeerAddress("::ffff:127.0.0.2") == v4)
        let v6 = try #require(PeerAddress("2001:db8::7"))
        #expect(!v6.isIPv4 && v6.description == "2001:db8::7" && v6.client.description == "2001:db8::")
        #expect(PeerAddress("2001:db8::8")?.client == v6.client)
        #expect(PeerAddress("localhost") == nil && PeerAddress("") == nil)
    }
}
