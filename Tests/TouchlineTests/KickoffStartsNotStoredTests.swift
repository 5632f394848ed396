import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineCore
@testable import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting

/// A device is started at most once into an APNs channel (docs/personal-pushes.md, "One start
/// per device and generation"). What a kickoff started is known to the next start into the
/// channel from the store once saved, and from the kickoff until then: also after the kickoff
/// finished, while its last save (which records its last starts) is still in the store.
@Suite struct KickoffStartsNotStoredTests {
    static let channel = "apns-channel-1"
    static let token = String(repeating: "cd", count: 32)

    static func kickoff(_ id: String) -> PersonalJobRecord {
        let payload = #"{"aps": {"event": "start", "timestamp": 1, "content-state": {}, "input-push-channel": "\#(channel)", "#
            + #""attributes-type": "MatchAttributes", "attributes": {}, "alert": {"title": "Kick-off", "body": "ARS v CHE"}}}"#
        return PersonalJobRecord(id: id, createdAt: SystemClock().now(),
                                 audience: String(decoding: PersonalAudience.follows("team:ARS").json.encoded, as: UTF8.self),
                                 payload: Array(payload.utf8))
    }

    /// The first kickoff starts the follower and finishes with its last save held in the store;
    /// the second, into the same channel, reads a store that does not show that start yet.
    @Test func aFinishedKickoffWhoseLastSaveIsInTheStoreStillLeavesItsStartsOut() async throws {
        let loop = EventLoop.start(name: "starts-not-stored")
        defer { loop.stopAndWait() }
        let store = InMemoryStore()
        let apns = InMemoryAPNs(loop: loop)
        let dispatcher = PersonalDispatcher(loop: loop, apns: apns, reader: store.openReader(), store: store, clock: SystemClock(),
                                            tokenEnvironment: nil, log: GatewayLog(component: "personal", level: .error))
        let first = Self.kickoff("kickoff-1"), second = Self.kickoff("kickoff-2")
        let stored = Mutex<Bool?>(nil)
        store.submit([.registerToken(TokenRecord(token: Self.token, kind: .pushToStart, follows: ["team:ARS"], registeredAt: SystemClock().now())),
                      .createJob(first), .createJob(second)]) { result in stored.withLock { $0 = (try? result.get()) != nil } }
        try await eventually("the follower and the kickoffs stored") { stored.withLock { $0 } != nil }
        try #require(stored.withLock { $0 } == true)
        try await dispatcher.resumed(openChannels: [Self.channel])

        store.holdCommits()
        defer { store.releaseCommits() }
        dispatcher.run(first)
        try await eventually("the first kickoff's start answered and the kickoff finished") {
            try !apns.requests.isEmpty && loop.sync { dispatcher.metricsSnapshot().jobsRunning } == 0
        }
        #expect(try store.openReader().startedTokens(among: [Self.token], into: Self.channel).isEmpty, "the start's record is held")
        dispatcher.run(second)
        try await eventually("the second kickoff left the follower out or started it again") {
            try loop.sync { dispatcher.metricsSnapshot().startsLeftOut } == 1 || apns.requests.count > 1
        }
        try await eventually("the second kickoff finished") { try loop.sync { dispatcher.metricsSnapshot().jobsRunning } == 0 }
        #expect(apns.requests.count == 1, "the follower was started \(apns.requests.count) times into one channel")
    }
}
