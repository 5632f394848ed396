import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineCore
@testable import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting

/// A job reaches its personal queue one way only: the jobs stored before the gateway began
/// through the resume, a job the API stores later through the intake (``PersonalDispatcher/run(_:)``).
/// The resume once read the store itself on the personal loop; a read that came after a new
/// job's commit (a loaded machine) started that job beside the intake: twice, or before its
/// kickoff's channel was known open (then expired at once).
@Suite struct PersonalJobStartsOnceTests {
    /// One dispatcher on a loop of its own over an in-memory store, and one update job to one token.
    struct Queue {
        let loop = EventLoop.start(name: "starts-once")
        let store = InMemoryStore()
        let apns: InMemoryAPNs
        let dispatcher: PersonalDispatcher
        let job = PersonalJobRecord(id: "job-once", createdAt: SystemClock().now(),
                                    audience: String(decoding: PersonalAudience.token(String(repeating: "ab", count: 32)).json.encoded, as: UTF8.self),
                                    payload: Array(#"{"aps": {"event": "update", "timestamp": 1, "content-state": {}}}"#.utf8))

        init() {
            apns = InMemoryAPNs(loop: loop)
            dispatcher = PersonalDispatcher(loop: loop, apns: apns, reader: store.openReader(), store: store, clock: SystemClock(),
                                            tokenEnvironment: nil, log: GatewayLog(component: "personal", level: .error))
        }

        func storeTheJob() async throws {
            let created = Mutex<Bool?>(nil)
            store.submit([.createJob(job)]) { result in created.withLock { $0 = (try? result.get()) != nil } }
            try await eventually("the job stored") { created.withLock { $0 } != nil }
            #expect(created.withLock { $0 } == true)
        }

        func resume(_ stored: [PersonalJobRecord]) async throws { try await dispatcher.resumed(stored) }

        func finished() async throws {
            try await eventually("the job's push answered and the job finished") {
                try !apns.requests.isEmpty && loop.sync { dispatcher.metricsSnapshot().jobsRunning } == 0
            }
            // Whatever a second start sent would have been sent on its loop turn; one more turn settles it.
            try loop.sync {}
        }
    }

    /// The API stored the job as the gateway began, and the resume comes later: it leaves the
    /// job to the intake, which runs it once, also with its end not committed yet (the store's
    /// commits held: the store still shows it pending).
    @Test func aJobStoredAfterTheGatewayBeganRunsOnceThroughTheIntake() async throws {
        let queue = Queue()
        defer { queue.loop.stopAndWait() }
        try await queue.storeTheJob()
        queue.store.holdCommits()
        defer { queue.store.releaseCommits() }
        queue.dispatcher.run(queue.job)
        try await queue.finished()
        // The resume answers once it has started what it was given: a second start would have sent by then.
        try await queue.resume([])
        #expect(queue.apns.requests.count == 1, "the job ran \(queue.apns.requests.count) times")
    }

    /// A job stored before the gateway began is resumed once.
    @Test func aJobStoredBeforeTheGatewayBeganIsResumedOnce() async throws {
        let queue = Queue()
        defer { queue.loop.stopAndWait() }
        try await queue.storeTheJob()
        try await queue.resume([queue.job])
        try await queue.finished()
        #expect(queue.apns.requests.count == 1)
    }
}
