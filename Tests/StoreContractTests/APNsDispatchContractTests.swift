import APNs
import Foundation
import Testing
import TestSlots
@testable import Touchline
import TouchlineCore
@testable import TouchlinePersonal
import TouchlineRuntime
import TouchlineTesting

/// The contract of ``BroadcastAPNsDispatch`` and ``PersonalAPNsDispatch``, on the real
/// connections (against the strict mock APNs over TLS) and on ``InMemoryAPNs``.
@Suite(.heavy) struct APNsDispatchContractTests {
    enum DispatchKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case apnsConnections
        case inMemory

        var testDescription: String { rawValue }
    }

    /// Both dispatches on loops of their own, and what to stop afterwards.
    final class Dispatches: @unchecked Sendable {
        let broadcast: any BroadcastAPNsDispatch
        let personal: any PersonalAPNsDispatch
        let loops: [EventLoop]
        private let stopMock: () -> Void
        private let directory: String?

        init(_ kind: DispatchKind) throws {
            let broadcastLoop = EventLoop.start(name: "contract-broadcast")
            let personalLoop = EventLoop.start(name: "contract-personal")
            loops = [broadcastLoop, personalLoop]
            switch kind {
            case .inMemory:
                broadcast = InMemoryAPNs(loop: broadcastLoop)
                personal = InMemoryAPNs(loop: personalLoop)
                stopMock = {}
                directory = nil
            case .apnsConnections:
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-dispatch-\(UUID().uuidString)").path
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                let (mock, settings) = try BundledMockAPNs.start(dataDirectory: directory)
                var configuration = GatewayConfiguration()
                configuration.dataDirectory = directory
                let context = Gateway.APNsContext(configuration: configuration, settings: settings, clock: SystemClock(),
                                                  log: GatewayLog(component: "contract", level: .error))
                let made = try #require(try Gateway.Backends.standard.apns(context)(broadcastLoop, personalLoop).apps[AppChannelID.defaultApp])
                broadcast = made.broadcast
                personal = made.personal
                stopMock = { mock.stop() }
                self.directory = directory
            }
        }

        func stop() async {
            await broadcast.shutdown(gracePeriod: .seconds(1))
            await personal.shutdown(gracePeriod: .seconds(1))
            for loop in loops { loop.stopAndWait() }
            stopMock()
            if let directory { try? FileManager.default.removeItem(atPath: directory) }
        }
    }

    /// What a completion saw: its result, whether it ran on the dispatch's loop, and whether the
    /// call that made the request had returned by then.
    struct Answer<T: Sendable>: Sendable {
        var result: Result<T, APNsError>
        var onLoop: Bool
        var afterTheCall: Bool
    }

    /// Makes one request on `dispatch`'s loop and waits for its single answer.
    static func request<T: Sendable, D: APNsDispatch>(_ dispatch: D,
                                                      _ make: @escaping @Sendable (D, @escaping (Result<T, APNsError>) -> Void) -> Void)
        async -> Answer<T> {
        let loop = dispatch.loop
        let box = UncheckedDispatch(dispatch)
        return await withCheckedContinuation { continuation in
            loop.execute {
                var returned = false
                var answers = 0
                make(box.dispatch) { result in
                    answers += 1
                    if answers == 1 { continuation.resume(returning: Answer(result: result, onLoop: loop.inEventLoop, afterTheCall: returned)) }
                }
                returned = true
            }
        }
    }

    static let payload = Array(#"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"home":1,"away":0}}}"#.utf8)

    @Test(arguments: DispatchKind.allCases)
    func channelsAreCreatedListedReadBroadcastToAndDeleted(kind: DispatchKind) async throws {
        let dispatches = try Dispatches(kind)
        let apns = dispatches.broadcast
        let refusedCreate = await Self.request(apns) { $0.createChannel(storage: .mostRecent, fence: HeldFence(holds: false), completion: $1) }
        #expect(refusedCreate.onLoop && refusedCreate.afterTheCall)
        #expect(refusedCreate.result.failure?.disposition == .withheld, "a create under a fence that no longer holds: \(refusedCreate.result)")
        let created = await Self.request(apns) { $0.createChannel(storage: .mostRecent, fence: HeldFence(holds: true), completion: $1) }
        #expect(created.onLoop && created.afterTheCall, "answers come on the dispatch's loop, after the call returned")
        let id = try created.result.get()
        #expect(try await Self.request(apns) { $0.listChannels(completion: $1) }.result.get().contains(id))
        #expect(try await Self.request(apns) { $0.readChannel(id, completion: $1) }.result.get().storagePolicy == .mostRecent)

        let broadcast = Broadcast(channelID: id, payload: Self.payload, priority: .immediate, expiration: .at(UnixTime(seconds: 1_767_229_200)))
        let sent = await Self.request(apns) { $0.broadcast(broadcast, fence: HeldFence(holds: true), completion: $1) }
        #expect(sent.onLoop && sent.afterTheCall)
        #expect(try sent.result.get().status == 200)
        // A fence that stamps its requests names them: the answer echoes the stamp.
        let stamp = FenceStamp(gateway: FenceStamp.tag(of: InstanceID("g7")!), partition: 5, fence: Fence(Revision(1_234)), serial: 9)
        let stamped = await Self.request(apns) { $0.broadcast(broadcast, fence: HeldFence(holds: true, requestID: stamp.uuid), completion: $1) }
        #expect(try stamped.result.get().requestID.flatMap(FenceStamp.init(uuid:)) == stamp, "\(stamped.result)")
        // A fence that no longer holds: the broadcast is withheld, never sent nor retried.
        let withheld = await Self.request(apns) { $0.broadcast(broadcast, fence: HeldFence(holds: false), completion: $1) }
        #expect(withheld.onLoop && withheld.afterTheCall)
        guard case .failure(let error) = withheld.result, error.disposition == .withheld else {
            Issue.record("a broadcast under a fence that no longer holds: \(withheld.result)")
            return
        }

        let refusedDelete = await Self.request(apns) { $0.deleteChannel(id, fence: HeldFence(holds: false), completion: $1) }
        #expect(refusedDelete.result.failure?.disposition == .withheld, "a delete under a fence that no longer holds: \(refusedDelete.result)")
        #expect(try await Self.request(apns) { $0.listChannels(completion: $1) }.result.get().contains(id), "the channel withheld from deletion stays")
        _ = try await Self.request(apns) { $0.deleteChannel(id, fence: nil, completion: $1) }.result.get()
        #expect(try await !Self.request(apns) { $0.listChannels(completion: $1) }.result.get().contains(id))
        await dispatches.stop()
    }

    @Test(arguments: DispatchKind.allCases)
    func devicePushesAreAnsweredOnTheirLoopAndObserved(kind: DispatchKind) async throws {
        let dispatches = try Dispatches(kind)
        let apns = dispatches.personal
        let observed = Mutex<[APNsEndpointKind]>([])
        try await apns.loop.submit { apns.observeExchanges { exchange in observed.withLock { $0.append(exchange.endpoint) } } }
        let push = LiveActivityPush(deviceToken: hexToken(42), payload: Self.payload, priority: .powerConsiderate)
        let sent = await Self.request(apns) { $0.send(push, fence: HeldFence(holds: true), completion: $1) }
        #expect(sent.onLoop && sent.afterTheCall)
        #expect(try sent.result.get().status == 200)
        #expect(observed.withLock { $0 } == [.device], "each exchange is observed once, on the loop")
        let withheld = await Self.request(apns) { $0.send(push, fence: HeldFence(holds: false), completion: $1) }
        #expect(withheld.onLoop && withheld.afterTheCall)
        guard case .failure(let error) = withheld.result, error.disposition == .withheld else {
            Issue.record("a device push under a fence that no longer holds: \(withheld.result)")
            return await dispatches.stop()
        }
        let figures = try await apns.loop.submit { apns.credentialFigures() }
        #expect(figures.statistics.tokensSigned >= 1)
        // A fence that stamps its requests names them: the answer echoes the stamp.
        let stamp = FenceStamp(gateway: FenceStamp.tag(of: InstanceID("g7")!), partition: 2, fence: Fence(Revision(77)), serial: 1)
        let stamped = await Self.request(apns) { $0.send(push, fence: HeldFence(holds: true, requestID: stamp.uuid), completion: $1) }
        #expect(try stamped.result.get().apnsID.flatMap(FenceStamp.init(uuid:)) == stamp, "\(stamped.result)")
        await dispatches.stop()
    }

    @Test(arguments: DispatchKind.allCases)
    func afterShutdownRequestsFailWithShutdown(kind: DispatchKind) async throws {
        let dispatches = try Dispatches(kind)
        let apns = dispatches.personal
        await apns.shutdown(gracePeriod: .seconds(1))
        let push = LiveActivityPush(deviceToken: hexToken(42), payload: Self.payload, priority: .powerConsiderate)
        let refused = await Self.request(apns) { $0.send(push, fence: nil, completion: $1) }
        #expect(refused.onLoop)
        guard case .failure(let error) = refused.result, case .transport(.shutdown) = error.failure else {
            Issue.record("a request after the shutdown got \(refused.result)")
            return await dispatches.stop()
        }
        await dispatches.stop()
    }
}

import Synchronization

/// Hands a dispatch to its own loop inside a `@Sendable` job.
private struct UncheckedDispatch<D>: @unchecked Sendable {
    let dispatch: D
    init(_ dispatch: D) { self.dispatch = dispatch }
}

/// A side effect's fence fixed at holding or not.
private struct HeldFence: SideEffectFence {
    let holds: Bool
    var requestID: String?
}
