import Foundation
import Synchronization
import Testing
import TestSlots
@testable import TouchlineCluster
import TouchlineCore
import TouchlineJetStream
@testable import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting

/// A cluster slice whose audience page cannot be read (its registry partition withdrawn from
/// the readers while its lease moves, or a read failing for a moment) reads it again, rather
/// than ending its walk and saving itself finished with the rest unsent.
@Suite struct SliceAudienceReadTests {
    @Test func aSlicesPageRefusedForAMomentIsReadAgainAndItsFollowerReached() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-slice-read-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/registry-0.sqlite"
        let file = try StoreWriter(path: path)
        defer { file.close() }
        try await file.submit([.registerToken(TokenRecord(token: KickoffStartsNotStoredTests.token, kind: .pushToStart, follows: ["team:ARS"],
                                                          registeredAt: SystemClock().now()))])
        // The partition's file is refused to the reader twice, as while it is withdrawn.
        let refusals = Mutex(2)
        let tokens = OwnedPartitionsReader(partitioning: TokenPartitioning(ChannelPartitioning(count: 1)!)) { _ in
            refusals.withLock { left in
                guard left > 0 else { return path }
                left -= 1
                return nil
            }
        }
        let loop = EventLoop.start(name: "slice-read")
        defer { loop.stopAndWait() }
        let apns = InMemoryAPNs(loop: loop)
        let dispatcher = PersonalDispatcher(loop: loop, apns: apns, reader: OwnedPartitionsPersonalReader(tokens: tokens, file: try SQLiteTokenReader(path: path)),
                                            store: file, clock: SystemClock(), tokenEnvironment: nil,
                                            log: GatewayLog(component: "personal", level: .error))
        try await dispatcher.resumed(openChannels: [KickoffStartsNotStoredTests.channel])

        try dispatcher.runAsOneSlice(KickoffStartsNotStoredTests.kickoff("kickoff-1"))
        try await eventually("the follower started once its partition is readable", timeout: .seconds(10)) { apns.requests.count == 1 }
        #expect(refusals.withLock { $0 } == 0, "both refusals read through")
    }
}
