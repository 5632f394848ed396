import APNs
import HTTP2
import Synchronization
import Touchline
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime

/// An APNs dispatch in memory, for tests: a ``BroadcastAPNsDispatch`` and a
/// ``PersonalAPNsDispatch`` on one loop, that records every request and answers with scripted
/// results (see ``script(_:)``), or by default like a well-behaved APNs: broadcasts and pushes
/// accepted (200), channels created with fresh ids, listed, read and deleted.
///
/// It keeps the dispatch contract: requests are made on ``loop`` and every completion runs
/// there, later (one `execute` hop), exactly once; after ``shutdown(gracePeriod:)`` requests
/// fail with the transport failure `.shutdown`.
package final class InMemoryAPNs: BroadcastAPNsDispatch, PersonalAPNsDispatch, @unchecked Sendable {
    /// One request, as made.
    package enum Request: Sendable {
        case broadcast(Broadcast)
        case createChannel(ChannelStorage)
        case deleteChannel(String)
        case listChannels
        case readChannel(String)
        case push(LiveActivityPush)

        var endpoint: APNsEndpointKind {
            switch self {
            case .broadcast: .broadcast
            case .push: .device
            case .createChannel, .deleteChannel, .listChannels, .readChannel: .channelManagement
            }
        }
    }

    /// A scripted success; it must fit the request (a channel id for a create, ids for a list,
    /// a configuration for a read, a response for the others), or the request fails.
    package enum Reply: Sendable {
        case response(APNsResponse)
        case channelID(String)
        case channelIDs([String])
        case configuration(APNsChannelConfiguration)
    }

    /// Answers a request: nil takes the default answer.
    package typealias Script = @Sendable (Request) -> Result<Reply, APNsError>?

    private struct State {
        var requests: [Request] = []
        var script: Script?
        var holding: (@Sendable (Request) -> Bool)?
        var held: [UncheckedDelivery] = []
        var channels: [String: ChannelStorage] = [:]
        var nextChannel = 1
        var isShutDown = false
        let channelPrefix: String
    }

    package let loop: EventLoop
    private let state: Mutex<State>
    private let journal: InMemoryAPNsJournal?
    /// Touched on ``loop`` only.
    private var observer: ((APNsExchange) -> Void)?

    /// `channelPrefix` starts the ids of the channels it creates: APNs gives ids unique across
    /// every gateway of a team, so gateways of one cluster each get a prefix of their own.
    /// `journal`: where it also records its requests, in one order with other APNs'.
    package init(loop: EventLoop, channelPrefix: String = "in-memory-channel-", journal: InMemoryAPNsJournal? = nil) {
        self.loop = loop
        self.journal = journal
        state = Mutex(State(channelPrefix: channelPrefix))
    }

    /// Every request made so far, in order (any thread).
    package var requests: [Request] { state.withLock { $0.requests } }

    /// Answers requests with `script` from now on (nil: the defaults again).
    package func script(_ script: Script?) { state.withLock { $0.script = script } }

    /// Answers to the requests `holding` picks from now on (decided as they are made, like the
    /// others) wait until ``releaseHeld()``: an APNs that takes its time, while the test moves
    /// the gateway on (cuts it off from its cluster, say). nil: no more are held.
    package func hold(_ holding: (@Sendable (Request) -> Bool)?) { state.withLock { $0.holding = holding } }

    /// Delivers the held answers, in the order their requests were made.
    package func releaseHeld() {
        for delivery in state.withLock({ s in defer { s.held = [] }; return s.held }) { loop.execute { delivery.run() } }
    }

    /// The channels the default answers know (created and not deleted), by id.
    package var channels: [String: ChannelStorage] { state.withLock { $0.channels } }

    /// An APNs rejection as the real client reports it: `status` and `reason`, classified.
    package static func rejection(status: Int, reason: String, endpoint: APNsEndpointKind, timestampMilliseconds: Int64? = nil) -> APNsError {
        var body = #"{"reason":"\#(reason)""#
        if let timestampMilliseconds { body += #","timestamp":\#(timestampMilliseconds)"# }
        return APNsError(rejection: HTTP2Response(status: status, body: Array((body + "}").utf8)), endpoint: endpoint)
    }

    // MARK: APNsDispatch

    package func observeExchanges(_ observer: @escaping (APNsExchange) -> Void) { self.observer = observer }

    package func poolStats(_ pool: APNsConnections.Pool) -> HTTP2ConnectionPool.Stats? { nil }

    package func credentialFigures() -> APNsCredentialFigures {
        APNsCredentialFigures(issuedAt: UnixTime(nanoseconds: 0), statistics: ProviderToken.Statistics(tokensSigned: 1))
    }

    /// Held answers are delivered: every completion runs once.
    package func shutdown(gracePeriod: Duration?, isCutShort: @escaping @Sendable () -> Bool) async {
        state.withLock { $0.isShutDown = true }
        releaseHeld()
    }

    /// Answers come as requests are made, so nothing is in flight to cut.
    package func cutShutdownShort() {}

    // MARK: Requests

    /// Stamped with the fence's request id when it has none, as the APNs client does.
    package func broadcast(_ broadcast: Broadcast, fence: (any SideEffectFence)?, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        if withheld(by: fence, endpoint: .broadcast, completion) { return }
        var broadcast = broadcast
        if broadcast.requestID == nil { broadcast.requestID = fence?.requestID }
        answer(.broadcast(broadcast), completion) { if case .response(let r) = $0 { r } else { nil } }
    }

    package func createChannel(storage: ChannelStorage, fence: (any SideEffectFence)?, completion: @escaping (Result<String, APNsError>) -> Void) {
        if withheld(by: fence, endpoint: .channelManagement, completion) { return }
        answer(.createChannel(storage), completion) { if case .channelID(let id) = $0 { id } else { nil } }
    }

    package func deleteChannel(_ apnsChannelID: String, fence: (any SideEffectFence)?, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        if withheld(by: fence, endpoint: .channelManagement, completion) { return }
        answer(.deleteChannel(apnsChannelID), completion) { if case .response(let r) = $0 { r } else { nil } }
    }

    /// A `fence` that no longer holds as the request is made withholds it, as the HTTP/2
    /// client does at its HEADERS frame: nothing is recorded, the failure comes on the loop.
    private func withheld<T>(by fence: (any SideEffectFence)?, endpoint: APNsEndpointKind,
                             _ completion: @escaping (Result<T, APNsError>) -> Void) -> Bool {
        guard let fence, !fence.holds else { return false }
        let delivery = UncheckedDelivery { completion(.failure(APNsError(transport: .withheld, endpoint: endpoint, sentID: nil))) }
        loop.execute { delivery.run() }
        return true
    }

    package func listChannels(completion: @escaping (Result<[String], APNsError>) -> Void) {
        answer(.listChannels, completion) { if case .channelIDs(let ids) = $0 { ids } else { nil } }
    }

    package func readChannel(_ apnsChannelID: String, completion: @escaping (Result<APNsChannelConfiguration, APNsError>) -> Void) {
        answer(.readChannel(apnsChannelID), completion) { if case .configuration(let c) = $0 { c } else { nil } }
    }

    /// Stamped with the fence's request id when it has none, as the APNs client does.
    package func send(_ push: LiveActivityPush, fence: (any SideEffectFence)?, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        if withheld(by: fence, endpoint: .device, completion) { return }
        var push = push
        if push.apnsID == nil { push.apnsID = fence?.requestID }
        answer(.push(push), completion) { if case .response(let r) = $0 { r } else { nil } }
    }

    /// Records `request`, decides its answer now and delivers it on the loop's next turn.
    private func answer<T>(_ request: Request, _ completion: @escaping (Result<T, APNsError>) -> Void, _ fit: (Reply) -> T?) {
        let outcome: Result<Reply, APNsError> = state.withLock { s in
            s.requests.append(request)
            journal?.record(request)
            if s.isShutDown {
                return .failure(APNsError(transport: .shutdown, endpoint: request.endpoint, sentID: nil))
            }
            return s.script?(request) ?? Self.defaultAnswer(request, &s)
        }
        let result: Result<T, APNsError> = outcome.flatMap { reply in
            fit(reply).map { .success($0) } ?? .failure(Self.misfit(reply, request))
        }
        let exchange = APNsExchange(endpoint: request.endpoint, outcome: Self.outcome(of: outcome), duration: .zero)
        let delivery = UncheckedDelivery { [self] in
            observer?(exchange)
            completion(result)
        }
        let isHeld = state.withLock { s in
            guard s.holding?(request) == true else { return false }
            s.held.append(delivery)
            return true
        }
        if !isHeld { loop.execute { delivery.run() } }
    }

    private static func misfit(_ reply: Reply, _ request: Request) -> APNsError {
        APNsError(endpoint: request.endpoint, failure: .unexpectedResponse(status: 200, detail: "scripted reply \(reply) does not fit \(request)"),
                  disposition: .drop)
    }

    private static func outcome(of result: Result<Reply, APNsError>) -> APNsExchange.Outcome {
        switch result {
        case .success: return .answered(status: 200, reason: nil)
        case .failure(let error):
            if let status = error.status { return .answered(status: status, reason: error.reason?.name) }
            return .noResponse(kind: "transport")
        }
    }

    private static func defaultAnswer(_ request: Request, _ state: inout State) -> Result<Reply, APNsError> {
        switch request {
        case .broadcast(let broadcast):
            // The request's id comes back, as APNs echoes it.
            return .success(.response(APNsResponse(status: 200, requestID: broadcast.requestID)))
        case .push(let push):
            return .success(.response(APNsResponse(status: 200, apnsID: push.apnsID)))
        case .createChannel(let storage):
            let id = "\(state.channelPrefix)\(state.nextChannel)"
            state.nextChannel += 1
            state.channels[id] = storage
            return .success(.channelID(id))
        case .deleteChannel(let id):
            guard state.channels.removeValue(forKey: id) != nil else {
                return .failure(rejection(status: 404, reason: "ChannelNotRegistered", endpoint: .channelManagement))
            }
            return .success(.response(APNsResponse(status: 204)))
        case .listChannels:
            return .success(.channelIDs(state.channels.keys.sorted()))
        case .readChannel(let id):
            guard let storage = state.channels[id] else {
                return .failure(rejection(status: 404, reason: "ChannelNotRegistered", endpoint: .channelManagement))
            }
            return .success(.configuration(APNsChannelConfiguration(channelID: id, storagePolicy: storage, pushType: "LiveActivity")))
        }
    }
}

/// A completion carried to the dispatch's loop, where it runs; loop-confined closures inside.
private struct UncheckedDelivery: @unchecked Sendable {
    let run: () -> Void
}
