import Testing
import TestSlots
@testable import Touchline
@testable import TouchlinePersonal

@Suite(.heavy) struct BroadcastPressureTests {
    @Test func onlyAWaitAtTheThresholdCountsAndItIsForgottenAfterTheWindow() async throws {
        let pressure = BroadcastPressure(threshold: .milliseconds(5), window: .milliseconds(100))
        #expect(!pressure.isUnderPressure)
        pressure.observeWait(since: BroadcastPressure.now() - 1_000_000)
        #expect(!pressure.isUnderPressure, "a 1 ms wait is below the threshold")
        pressure.observeWait(since: BroadcastPressure.now() - 6_000_000)
        #expect(pressure.isUnderPressure)
        try await Task.sleep(for: .milliseconds(150))
        #expect(!pressure.isUnderPressure, "the window has passed")
    }
}
