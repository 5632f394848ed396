import Dispatch
import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineConfiguration
import TouchlineCore
@testable import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineTesting
import TouchlineWebhooks

/// A job's end is saved once: one `personal.job.finished` event for a job of the gateway's file,
/// one end of its run told to the board for a cluster's slice. The save completion of a job
/// whose last answer came in the same loop turn may carry the end before the turn's end moves
/// the job out of the running ones; that move once asked for one more save (a loaded machine
/// made a second event with a new id, and a slice's extra save was refused by the board every
/// second, its run having ended).
@Suite struct PersonalJobEndSavedOnceTests {
    /// Commits through an in-memory store and answers on the submitter's thread before `submit`
    /// returns, so a save's completion reaches the personal loop's mailbox right behind the APNs
    /// answers of the same turn (a loaded machine's order, made certain), ahead of the turn's end.
    final class CommitsAtOnce: PersonalStoreWriter, @unchecked Sendable {
        let store = InMemoryStore()
        /// Every batch committed, in order.
        let committed = Mutex<[[TokenOperation]]>([])

        var health: StoreHealth { store.health }
        var isOpen: Bool { store.isOpen }
        var queueDepth: Int { store.queueDepth }
        var statistics: StoreWriterStatistics { store.statistics }
        func close() { store.close() }

        func submit(summarizing operations: [TokenOperation],
                    completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
            let answered = DispatchSemaphore(value: 0)
            let result = Mutex<Result<TokenWriteSummary, StoreError>>(.failure(.closed))
            store.submit(summarizing: operations) { outcome in
                result.withLock { $0 = outcome }
                answered.signal()
            }
            answered.wait()
            let outcome = result.withLock { $0 }
            if case .success = outcome { committed.withLock { $0.append(operations) } }
            completion(outcome)
        }

        /// The committed webhook events of `type`.
        func events(_ type: WebhookEventType) -> [WebhookOutboxEntry] {
            committed.withLock { $0 }.joined().compactMap { operation in
                if case .webhook(.record(let entry)) = operation, entry.type == type.rawValue { entry } else { nil }
            }
        }
    }

    static let token = String(repeating: "ab", count: 32)

    @Test func aFileJobsEndIsReportedByOneEvent() async throws {
        let loop = EventLoop.start(name: "end-saved-once")
        defer { loop.stopAndWait() }
        let store = CommitsAtOnce()
        let apns = InMemoryAPNs(loop: loop)
        let settings = WebhookSettings(endpoints: [.init(name: "receiver", url: try WebhookURL(parsing: "http://127.0.0.1:9/hooks"),
                                                         secret: Array("secret".utf8), events: Set(WebhookEventType.allCases))])
        let webhooks = try WebhookDelivery(loop: loop, settings: settings, sources: [], clock: SystemClock(),
                                           log: GatewayLog(component: "webhooks", level: .error))
        let dispatcher = PersonalDispatcher(loop: loop, apns: apns, reader: store.store.openReader(), store: store, clock: SystemClock(),
                                            tokenEnvironment: nil, webhooks: webhooks, log: GatewayLog(component: "personal", level: .error))
        let job = PersonalJobRecord(id: "job-end", createdAt: SystemClock().now(),
                                    audience: String(decoding: PersonalAudience.token(Self.token).json.encoded, as: UTF8.self),
                                    payload: Array(#"{"aps": {"event": "update", "timestamp": 1, "content-state": {}}}"#.utf8))
        try await store.store.submit([.createJob(job)])
        try await dispatcher.resumed()

        dispatcher.run(job)
        try await eventually("the job's end saved") { !store.events(.personalJobFinished).isEmpty }
        // A second save would follow at the end of the loop turn that saved the end.
        try await Task.sleep(for: .milliseconds(200))
        #expect(store.events(.personalJobFinished).count == 1, "the end was reported \(store.events(.personalJobFinished).count) times")
        #expect(try store.store.openReader().job(id: job.id)?.status == .done)
        #expect(apns.requests.count == 1)
    }

    /// A board of slices that, like the cluster's, refuses a slice's save once its run ended.
    final class OneSliceBoard: PersonalJobBoard, @unchecked Sendable {
        struct NoLongerRun: Error {}

        let loop: EventLoop
        /// Touched on `loop` only.
        private(set) var ended = 0
        private(set) var refused = 0
        private(set) var finishedSaves = 0

        init(loop: EventLoop) { self.loop = loop }

        var namesJobsByKey: Bool { false }
        var slicesStarted: Int { 1 }

        func save(_ key: SharedJobPlan.SliceKey, checkpoint: FanOutCheckpoint, isFinished: Bool, writes: [TokenOperation],
                  completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
            guard ended == 0 else {
                refused += 1
                return completion(.failure(NoLongerRun()))
            }
            if isFinished { finishedSaves += 1 }
            loop.execute { completion(.success(0)) }
        }

        func sliceRunEnded(_ key: SharedJobPlan.SliceKey) { ended += 1 }

        func storeRolloverStarts(_ jobs: [PersonalJobRecord], through intake: PersonalJobIntake, completion: @escaping @Sendable (Bool) -> Void) {
            completion(false)
        }
        func store(_ jobs: [PersonalJobRecord], then operations: [TokenOperation], through intake: PersonalJobIntake, for request: HTTPRequest,
                   answer: JSONValue, idempotency claim: IdempotencyClaim?, settled: (@Sendable (_ stored: Bool) -> Void)?) {
            settled?(false)
        }
        func progress(of jobID: String, answerLoop: EventLoop, completion: @escaping @Sendable (PersonalJobView?, String?) -> Void) {
            completion(nil, nil)
        }
        func cancelKickoffs(into apnsChannelID: String) {}
        func announceStarts(into apnsChannelID: String) {}
        func cancelScheduled(_ jobID: String, into apnsChannelID: String,
                             answer: @escaping @Sendable (PersonalDispatcher.Cancellation) -> Void) -> Bool { false }
        func moveScheduledStarts(from previous: String, to successor: String, completion: @escaping @Sendable (Bool) -> Void) {
            completion(true)
        }
        func scheduledStarts(into apnsChannelID: String) -> [PersonalJobRecord] { [] }
        func stop() {}
    }

    @Test func aSlicesEndIsToldToTheBoardOnceAndNothingIsSavedAfterIt() async throws {
        let loop = EventLoop.start(name: "slice-end-saved-once")
        defer { loop.stopAndWait() }
        let store = InMemoryStore()
        try await store.submit([.registerToken(TokenRecord(token: KickoffStartsNotStoredTests.token, kind: .pushToStart, follows: ["team:ARS"],
                                                           registeredAt: SystemClock().now()))])
        let apns = InMemoryAPNs(loop: loop)
        let dispatcher = PersonalDispatcher(loop: loop, apns: apns, reader: store.openReader(), store: store, clock: SystemClock(),
                                            tokenEnvironment: nil, log: GatewayLog(component: "personal", level: .error))
        let board = OneSliceBoard(loop: loop)
        try loop.sync { dispatcher.jobBoard = board }
        try await dispatcher.resumed(openChannels: [KickoffStartsNotStoredTests.channel])

        try dispatcher.runAsOneSlice(KickoffStartsNotStoredTests.kickoff("kickoff-1"))
        try await eventually("the slice's end told to the board") { try loop.sync { board.ended } > 0 }
        // A save after the end would follow at the end of the loop turn that saved it.
        try await Task.sleep(for: .milliseconds(200))
        let (ended, refused, finishedSaves) = try loop.sync { (board.ended, board.refused, board.finishedSaves) }
        #expect(ended == 1)
        #expect(refused == 0, "\(refused) saves after the slice's run ended")
        #expect(finishedSaves == 1)
        #expect(apns.requests.count == 1)
    }
}
