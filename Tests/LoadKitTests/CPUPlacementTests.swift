import LoadKit
import Testing

@Suite struct CPUPlacementTests {
    @Test func oneCPUIsShared() {
        let placement = CPUPlacement(cpus: 1)
        #expect(placement.clients == nil && placement.mock == nil)
        #expect(placement.mockCPUCount == 1)
    }

    @Test func twoCPUsGiveTheMockOne() {
        let placement = CPUPlacement(cpus: 2)
        #expect(placement.clients == "0")
        #expect(placement.mock == "1")
        #expect(placement.mockCPUCount == 1)
    }

    @Test func theMockGetsAQuarterOfLargerMachines() {
        let placement = CPUPlacement(cpus: 8)
        #expect(placement.clients == "0-5")
        #expect(placement.mock == "6-7")
        #expect(placement.mockCPUCount == 2)
    }

    @Test func unpinnedRunsLetEveryProcessUseEveryCPU() {
        let placement = CPUPlacement.shared(cpus: 4)
        #expect(placement.clients == nil && placement.mock == nil)
        #expect(placement.mockCPUCount == 4)
    }
}
