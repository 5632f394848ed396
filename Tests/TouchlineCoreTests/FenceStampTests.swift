import Testing
import TouchlineCore

/// The ownership a push was decided under, in its request id: what APNs (or the mock) records
/// then names the gateway and the fence of each push.
@Suite("Fence stamps")
struct FenceStampTests {
    @Test(arguments: [(0, 1, 0), (63, 1_234, 9), (4_095, (1 << 48) - 1, (1 << 26) - 1), (7, 1 << 40, 12_345)])
    func aStampReadsBackFromItsRequestID(partition: Int, revision: UInt64, serial: UInt32) throws {
        let stamp = FenceStamp(gateway: FenceStamp.tag(of: try #require(InstanceID("gateway-1"))), partition: partition,
                               fence: Fence(Revision(revision)), serial: serial)
        let id = stamp.uuid
        #expect(FenceStamp(uuid: id) == stamp)
        #expect(FenceStamp(uuid: id)?.fence == Fence(Revision(revision)))
        #expect(FenceStamp(uuid: id)?.partition == UInt16(partition))
        // Canonical: 8-4-4-4-12 lowercase hex, version 8, variant 10.
        let groups = id.split(separator: "-").map(String.init)
        #expect(groups.map(\.count) == [8, 4, 4, 4, 12], "\(id)")
        #expect(id == id.lowercased() && id.allSatisfy { $0.isHexDigit || $0 == "-" }, "\(id)")
        #expect(groups[2].first == "8" && ["8", "9", "a", "b"].contains(groups[3].first), "\(id)")
    }

    @Test func eachRequestHasAnIDOfItsOwnAndGatewaysAreToldApart() throws {
        let g1 = FenceStamp.tag(of: try #require(InstanceID("g1"))), g2 = FenceStamp.tag(of: try #require(InstanceID("g2")))
        #expect(g1 != g2)
        #expect(g1 == FenceStamp.tag(of: try #require(InstanceID("g1"))), "a restarted gateway keeps its tag")
        let fence = Fence(Revision(42))
        let ids = (0..<1_000).map { FenceStamp(gateway: g1, partition: 3, fence: fence, serial: UInt32($0)).uuid }
        #expect(Set(ids).count == 1_000)
        #expect(FenceStamp(uuid: ids[0])?.gateway == g1)
        #expect(FenceStamp(uuid: ids[0].uppercased()) == FenceStamp(uuid: ids[0]), "an id echoed in capitals reads the same")
    }

    @Test(arguments: ["3f2504e0-4f89-41d3-9a0c-0305e82c3301", "not-a-uuid", "", "3f2504e0-4f89-81d3-ca0c-0305e82c3301",
                      "3f2504e04f8981d39a0c0305e82c3301", "3f2504e0-4f89-81d3-9a0c-0305e82c330",
                      "+f2504e0-4f89-81d3-9a0c-0305e82c3301"])
    func anIDThatIsNotAStampReadsAsNone(id: String) {
        #expect(FenceStamp(uuid: id) == nil, "\(id)")
    }
}
