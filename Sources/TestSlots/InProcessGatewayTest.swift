import Foundation
import Testing

/// The trait of suites whose tests start gateways in process (on the in-memory backends, their
/// clients without a socket): no file, no connection, but a gateway's loops and threads all the
/// same. Such a test takes no heavy slot but one of a few slots of its own
/// (``HeavyTestSlots/inProcess``, two per CPU and at least two), so that a run never starts
/// dozens of gateways at once beside the heavy tests (the burst the heavy slots exist to avoid;
/// most of these tests hold their slot for well under a second, a cluster member waiting for
/// its partitions' leases a few seconds). A test that also carries
/// ``HeavyTest`` (a suite's live tier) takes only its heavy slot.
public struct InProcessGatewayTest: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        guard testCase != nil, !test.traits.contains(where: { $0 is HeavyTest }) else { return try await function() }
        await HeavyTestSlots.inProcess.acquire()
        defer { HeavyTestSlots.inProcess.release() }
        try await function()
    }
}

extension Trait where Self == InProcessGatewayTest {
    /// The tests start gateways in process (see ``InProcessGatewayTest``).
    public static var gatewaysInProcess: InProcessGatewayTest { InProcessGatewayTest() }
}

extension HeavyTestSlots {
    /// The slots of the tests that start gateways in process, apart from the heavy ones.
    public static let inProcess = HeavyTestSlots(count: max(2, 2 * ProcessInfo.processInfo.activeProcessorCount))
}
