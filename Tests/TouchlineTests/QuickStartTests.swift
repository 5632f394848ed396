import Foundation
import Testing
import TestSlots

/// The README's run command (`touchline demo`) keeps working: the gateway starts on its
/// embedded defaults, takes the sample match, and APNs receives critical and routine
/// broadcasts and the final `end`.
@Suite("Quick start", .heavy(long: true))
struct QuickStartTests {
    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func demoFeedsTheSampleMatchThroughTheGateway() async throws {
        // The demo takes about ten seconds.
        let (status, text) = try await ServeProcess.runToEnd(["demo"])

        #expect(status == 0, "\(text)")
        #expect(text.contains("POST /v1/channels -> 201"))
        #expect(text.components(separatedBy: "-> 202").count - 1 == 9, "eight events and the end are acknowledged")
        #expect(text.contains("APNs broadcast, priority 10"))
        #expect(text.contains("APNs broadcast, priority 5"))
        #expect(text.contains(#""alert":{"title":"Goal!","body":"ARS 2-1 CHE"}"#))
        #expect(text.contains(#""event":"end""#))
    }
}
