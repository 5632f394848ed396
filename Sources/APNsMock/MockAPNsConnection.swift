import HTTP2
import TouchlineCore
import TouchlineRuntime

/// One client connection to the mock: APNs' connection-level rules on top of an HTTP/2 server
/// connection. Loop-confined (owned by its ``MockAPNsWorker``).
///
/// Per connection, like APNs: the provider token is verified once and then compared; a new
/// token is allowed only every 20 minutes; the stream limit starts at 1 and is raised after the
/// first accepted request. Fault injection (latency, GOAWAY after N requests, random 429/500/503)
/// also lives here, with dice seeded per connection so runs repeat.
final class MockAPNsConnection: @unchecked Sendable {
    let number: Int
    let port: MockAPNsPort
    private unowned let worker: MockAPNsWorker
    // Strong copies of what every request touches: reading them through the unowned worker
    // would cost a retain and a release each time.
    private let shared: MockAPNsShared
    private let counters: MockAPNsCounterShard
    private let arrivals: MockAPNsArrivalShard
    private let loop: EventLoop
    private var http2: HTTP2ServerConnection?
    private var tokens = ProviderTokenSession()
    private var streamLimitRaised = false
    private var requestsReceived = 0
    /// The highest stream id served so far: requests complete out of stream order, so a GOAWAY
    /// must name this one, not the id of the request that reached the limit, or streams already
    /// answered would look unprocessed and be sent again.
    private var highestServedStreamID: Int32 = 0
    private var faultDice: SplitMix64
    private var ids: SplitMix64
    private var delayed = DelayedAnswers()
    private var delayTimer: LoopTimer?
    /// The client sent GOAWAY and ``MockAPNsConfiguration/Faults/silentAfterClientGoaway`` is on:
    /// nothing more is answered.
    private var silenced = false
    // Settings read on every request, copied out of the configuration once.
    private let faults: MockAPNsConfiguration.Faults
    private let clock: any WallClock
    private let diagnosticHeader: Bool
    private let streamLimits: (initial: Int, raised: Int)
    /// `faults.providerTokenClockOffset` in whole seconds, added to the clock for token checks.
    private let tokenClockOffsetSeconds: Int64

    init(number: Int, port: MockAPNsPort, worker: MockAPNsWorker) {
        self.number = number
        self.port = port
        self.worker = worker
        shared = worker.shared
        counters = worker.counters
        arrivals = worker.arrivals
        loop = worker.loop
        let configuration = worker.shared.configuration
        faults = configuration.faults
        clock = configuration.clock
        diagnosticHeader = configuration.diagnosticHeader
        streamLimits = (configuration.initialMaxConcurrentStreams, configuration.maxConcurrentStreams)
        tokenClockOffsetSeconds = configuration.faults.providerTokenClockOffset.inNanoseconds / 1_000_000_000
        faultDice = SplitMix64(seed: faults.seed &+ UInt64(number))
        var seeder = SystemRandomNumberGenerator()
        ids = SplitMix64(seed: seeder.next())
    }

    /// Starts TLS on an accepted socket; false if the TLS session could not be created.
    func start(socket fd: Int32) -> Bool {
        let settings = HTTP2ServerSettings(initialMaxConcurrentStreams: streamLimits.initial)
        http2 = HTTP2ServerConnection.accept(loop: loop, context: shared.tls, socket: fd, settings: settings, delegate: self)
        return http2 != nil
    }

    func close() {
        delayTimer?.cancel()
        http2?.close()
    }

    // MARK: - Answering

    private func respond(to streamID: Int32, with answer: MockAPNsAnswer) {
        guard let http2 else { return }
        guard !silenced else {
            counters.countWithheldAnswer()
            return
        }
        if (200..<300).contains(answer.status), !streamLimitRaised {
            streamLimitRaised = true
            if streamLimits.raised != streamLimits.initial { http2.setMaxConcurrentStreams(streamLimits.raised) }
        }
        http2.respond(to: streamID, status: answer.status, headers: answer.headers, body: answer.body)
    }

    private func answer(_ request: HTTP2ServerRequest, now: UnixTime) -> MockAPNsAnswer {
        let head = MockAPNsRequestHead(request.headers)
        let body = MockAPNsBody(bytes: request.body, length: request.bodyLength)
        let app = shared.app
        var endpoint = MockAPNsEndpoint.unknown
        do throws(MockAPNsRejection) {
            let route = try MockAPNsRoute(port: port, method: head.method, path: head.pathBytes)
            endpoint = route.endpoint
            if let name = head.duplicate { throw MockAPNsRejection(.duplicateHeaders, "\(name) appears more than once") }
            try authorize(head, request.headers, now: now)
            try rollFaultDice(endpoint)
            switch route {
            case .device(let token):
                let facts = try DeviceEndpointRules.check(token: token, head: head, body: body, app: app, registry: shared.registry)
                if let since = shared.registry.unregisteredSince(token) {
                    var answer = rejection(MockAPNsRejection(.unregistered, "token \(token) is no longer valid"), endpoint: endpoint, head: head, now: since)
                    answer.facts = facts
                    return answer
                }
                return success(endpoint: endpoint, status: 200, head: head, facts: facts)
            case .broadcast(let bundleID):
                let facts = try BroadcastEndpointRules.check(bundleID: bundleID, head: head, body: body, app: app, registry: shared.registry)
                return success(endpoint: endpoint, status: 200, head: head, facts: facts)
            default:
                let outcome = try ChannelEndpointRules.handle(route, head: head, body: body, app: app, registry: shared.registry)
                var answer = success(endpoint: endpoint, status: outcome.status, head: head, facts: outcome.facts)
                answer.body = outcome.body
                if let id = outcome.createdChannelID { answer.headers.add("apns-channel-id", id) }
                return answer
            }
        } catch {
            return rejection(error, endpoint: endpoint, head: head, now: now)
        }
    }

    private func authorize(_ head: MockAPNsRequestHead, _ headers: HTTP2HeaderBlock, now: UnixTime) throws(MockAPNsRejection) {
        let value = head.authorizationIndex.map { headers.valueBytes(at: $0) }
        try tokens.authorize(value, now: now.seconds + tokenClockOffsetSeconds, verifier: shared.verifier)
    }

    private func rollFaultDice(_ endpoint: MockAPNsEndpoint) throws(MockAPNsRejection) {
        let total = faults.tooManyRequestsRate + faults.internalServerErrorRate + faults.shutdownRate
        guard total > 0, faults.rateEndpoints.contains(endpoint) else { return }
        let roll = faultDice.unit()
        if roll < faults.tooManyRequestsRate {
            throw MockAPNsRejection(.tooManyRequests, "injected 429")
        } else if roll < faults.tooManyRequestsRate + faults.internalServerErrorRate {
            throw MockAPNsRejection(.internalServerError, "injected 500")
        } else if roll < total {
            throw MockAPNsRejection(.shutdown, "injected 503")
        }
    }

    /// The request-id header of the endpoint: `apns-id` for device pushes, `apns-request-id` otherwise.
    private func idHeader(_ endpoint: MockAPNsEndpoint, _ head: MockAPNsRequestHead) -> (name: StaticString, value: String) {
        let isDevice = endpoint == .device || (endpoint == .unknown && port == .push && head.requestID == nil)
        let sent = isDevice ? head.apnsID : head.requestID
        let value = sent.flatMap { MockAPNsText.isUUID($0) ? $0 : nil } ?? MockAPNsText.uuid(ids.next(), ids.next())
        return (isDevice ? "apns-id" : "apns-request-id", value)
    }

    private func success(endpoint: MockAPNsEndpoint, status: Int, head: MockAPNsRequestHead, facts: MockAPNsFacts) -> MockAPNsAnswer {
        var answer = MockAPNsAnswer(endpoint: endpoint, status: status, facts: facts)
        let id = idHeader(endpoint, head)
        answer.headers.add(id.name, id.value)
        if endpoint == .device || endpoint == .broadcast {
            answer.headers.add("apns-unique-id", MockAPNsText.uuid(ids.next(), ids.next()))
        }
        return answer
    }

    private func rejection(_ rejection: MockAPNsRejection, endpoint: MockAPNsEndpoint, head: MockAPNsRequestHead, now: UnixTime) -> MockAPNsAnswer {
        var answer = MockAPNsAnswer(endpoint: endpoint, status: rejection.reason.status, reason: rejection.reason, detail: rejection.detail)
        let id = idHeader(endpoint, head)
        answer.headers.add(id.name, id.value)
        answer.headers.add("content-type", "application/json")
        if diagnosticHeader {
            answer.headers.add("x-mock-apns-detail", String(rejection.detail.map { $0.isASCII && !$0.isNewline ? $0 : "?" }))
        }
        answer.body = rejection.reason == .unregistered
            ? Array("{\"reason\":\"Unregistered\",\"timestamp\":\(now.nanoseconds / 1_000_000)}".utf8)
            : MockAPNsShared.errorBody(rejection.reason)
        return answer
    }

    // MARK: - Bookkeeping

    private func record(_ request: HTTP2ServerRequest, _ answer: MockAPNsAnswer, receivedAt: UnixTime) {
        counters.count(endpoint: answer.endpoint, reason: answer.reason)
        let accepted = (200..<300).contains(answer.status)
        arrivals.record(endpoint: answer.endpoint, status: answer.status, priority: accepted ? answer.facts.priority : nil,
                        sentAt: accepted ? shared.timestampField?.value(in: request.body) : nil, at: receivedAt.nanoseconds)
        guard shared.recording.isEnabled else { return }
        shared.recording.append(MockAPNsRecordedRequest(
            connection: number, port: port, endpoint: answer.endpoint, streamID: request.streamID,
            method: request.method ?? "", path: request.path ?? "", headers: request.headers.all, body: request.body,
            status: answer.status, reason: answer.reason, detail: answer.detail,
            responseHeaders: (0..<answer.headers.count).map { HTTP2Header(answer.headers[$0].name.description, answer.headers[$0].value) },
            receivedAt: receivedAt, deviceToken: answer.facts.deviceToken, channelID: answer.facts.channelID,
            priority: answer.facts.priority, event: answer.facts.event))
    }

    private func scheduleDelayed(_ streamID: Int32, _ answer: MockAPNsAnswer) {
        delayed.append(streamID: streamID, answer: answer, due: .now + faults.latency)
        if delayTimer == nil {
            delayTimer = LoopTimer(loop: loop) { [unowned self] in self.releaseDelayed() }
        }
        if let timer = delayTimer, !timer.isScheduled { timer.schedule(after: faults.latency) }
    }

    private func releaseDelayed() {
        let now = ContinuousClock.now
        while let (streamID, answer) = delayed.popDue(now: now) { respond(to: streamID, with: answer) }
        if let next = delayed.nextDue { delayTimer?.schedule(after: next - now) }
    }
}

extension MockAPNsConnection: HTTP2ServerConnectionDelegate {
    func connection(_ connection: HTTP2ServerConnection, didReceive request: HTTP2ServerRequest) {
        let now = clock.now()
        let answer = answer(request, now: now)
        record(request, answer, receivedAt: now)
        if faults.latency > .zero {
            scheduleDelayed(request.streamID, answer)
        } else {
            respond(to: request.streamID, with: answer)
        }
        requestsReceived += 1
        highestServedStreamID = max(highestServedStreamID, request.streamID)
        if let limit = faults.goawayAfterRequests, requestsReceived == limit {
            let payload = "{\"reason\":\"\(faults.goawayReason)\"}"
            connection.sendGoaway(lastStreamID: highestServedStreamID, debugData: Array(payload.utf8))
        }
    }

    func connectionDidRejectFrame(_ connection: HTTP2ServerConnection, errorCode: Int32) {
        counters.countRejectedFrame()
    }

    func connectionDidReceiveGoaway(_ connection: HTTP2ServerConnection) {
        if faults.silentAfterClientGoaway { silenced = true }
    }

    func connectionDidClose(_ connection: HTTP2ServerConnection, error: TransportError) {
        delayTimer?.cancel()
        delayTimer = nil
        http2 = nil
        worker.connectionClosed(self)
    }
}

/// A complete answer before it is sent.
struct MockAPNsAnswer {
    var endpoint: MockAPNsEndpoint
    var status: Int
    var reason: MockAPNsReason?
    var detail: String?
    var headers = DynamicHeaders()
    var body: [UInt8] = []
    var facts = MockAPNsFacts()
}

/// Answers held back by the latency fault, in due order (the delay is fixed, so arrival order is due order).
private struct DelayedAnswers {
    private var items: [(streamID: Int32, answer: MockAPNsAnswer, due: ContinuousClock.Instant)] = []
    private var head = 0

    mutating func append(streamID: Int32, answer: MockAPNsAnswer, due: ContinuousClock.Instant) {
        items.append((streamID, answer, due))
    }

    var nextDue: ContinuousClock.Instant? { head < items.count ? items[head].due : nil }

    mutating func popDue(now: ContinuousClock.Instant) -> (Int32, MockAPNsAnswer)? {
        guard head < items.count, items[head].due <= now else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return (item.streamID, item.answer)
    }
}
