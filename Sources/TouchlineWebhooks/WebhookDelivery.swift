import Foundation
import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Delivers the webhook outboxes of both store files, on a loop of its own.
///
/// Every `pollInterval` it reads, for each endpoint with a free slot, the deliveries due in
/// either outbox, POSTs each event (signed: ``WebhookSignature``) on a connection of its own,
/// and decides with ``WebhookRetryPolicy``: delivered, tried again later, or dead. Outcomes are
/// written back to the file the event came from, all outcomes of one loop turn in one small
/// write, and a delivery stays in flight until that write has committed, so it is never sent
/// twice at once; an outcome whose write failed is written again a second later, its delivery
/// still in flight (not sent again while the disk is full).
///
/// Nothing here runs on the broadcast path: a slow or dead receiver holds at most
/// `maxConcurrentPerEndpoint` connections of this loop, and its outcomes are a few rows in a
/// group commit. Old events are pruned after the retention, a bounded batch at a time, as long
/// as a file holds any.
///
/// **Thread confinement:** everything but `loop` is touched on `loop` only (`@unchecked
/// Sendable` so that store completions and other loops can hand work to it with `execute`).
package final class WebhookDelivery: @unchecked Sendable {
    let loop: EventLoop
    package let outbox: WebhookOutbox
    private let settings: WebhookSettings
    private let clock: any WallClock
    private let log: GatewayLog
    private let sources: [Source]
    private let tls: TLSContext?
    private var inFlight: Set<DeliveryKey> = []
    /// Outcomes decided and not yet handed to their store, by source.
    private var unsaved: [[WebhookDeliveryUpdate]]
    private var counters: [String: Counters] = [:]
    private var pollTimer: LoopTimer?
    private var flushTimer: LoopTimer?
    /// Facts that recur on every request (rejected credentials, the channel limit): one event per key per five minutes.
    private var alerts = WebhookAlertThrottle(interval: .seconds(300))
    /// Per source: when its last prune was written, and whether that write is still out.
    private var lastPrune: [UnixTime?]
    private var pruning: Set<Int> = []
    private var random = SystemRandomNumberGenerator()
    private var isStopping = false
    /// Exchanges started and not yet answered; at shutdown they get a short grace.
    private var outstanding = 0
    /// Set once the shutdown grace has ended: answers arriving later are not recorded (those
    /// deliveries stay pending and go again after the next start).
    private var isAbandoning = false
    private var drained: (() -> Void)?

    /// How often due deliveries are looked for.
    static let pollInterval = Duration.milliseconds(250)
    /// How often a file holding events older than the retention is pruned, and how many one
    /// prune drops at most: up to 43 million events a day per file, in small writes.
    static let pruneInterval = Duration.seconds(1)
    static let pruneBatch = 500
    /// How long outcomes whose write failed wait before they are written again.
    static let saveRetryInterval = Duration.seconds(1)

    /// One store file's outbox: its reader (on this loop) and how outcomes are written to it.
    /// The gateway passes the channels' file first and the personal file last; facts without a
    /// store change of their own go to the last (the personal writer: never in front of a
    /// channel's commit).
    /// How an outbox operation is written to its store, with the completion told the result.
    package typealias OutboxWrite = @Sendable (WebhookOperation, @escaping @Sendable (Result<Void, StoreError>) -> Void) -> Void

    package struct Source {
        var name: String
        var reader: any WebhookOutboxReader
        var write: OutboxWrite

        package init(name: String, reader: any WebhookOutboxReader, write: @escaping OutboxWrite) {
            self.name = name
            self.reader = reader
            self.write = write
        }
    }

    private struct DeliveryKey: Hashable {
        var source: Int
        var endpoint: String
        var outboxID: Int64
    }

    /// Since the start, per endpoint.
    struct Counters: Sendable, Equatable {
        var delivered = 0
        var failedAttempts = 0
        var dead = 0
    }

    package init(loop: EventLoop, settings: WebhookSettings, sources: [Source], clock: any WallClock, log: GatewayLog) throws {
        self.loop = loop
        self.settings = settings
        self.sources = sources
        self.clock = clock
        self.log = log
        outbox = WebhookOutbox(settings: settings, clock: clock)
        unsaved = sources.map { _ in [] }
        lastPrune = sources.map { _ in nil }
        let needsTLS = settings.endpoints.contains { $0.url.isTLS }
        tls = needsTLS ? try TLSContext.client(TLSConfiguration(caFile: settings.caFile), applicationProtocol: nil) : nil
    }

    /// Starts polling (the first poll delivers what a previous run left pending).
    package func start() {
        loop.execute { [self] in poll() }
    }

    /// Stops taking new deliveries, gives the attempts in flight up to `gracePeriod` for their
    /// answers, and hands the decided outcomes to their stores; called before the stores close.
    /// An attempt still unanswered after the grace is abandoned: it stays pending in the store
    /// and goes again after the next start (the receiver drops the repeat by its event id).
    package func stop(gracePeriod: Duration, isCutShort: @escaping @Sendable () -> Bool = { false }) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                isStopping = true
                pollTimer?.cancel()
                let grace = LoopTimer(loop: loop) { [self] in drained?() }
                drained = { [self] in
                    drained = nil
                    grace.cancel()
                    isAbandoning = true
                    flush()
                    done.resume()
                }
                if outstanding == 0 || isCutShort() { drained?() } else { grace.schedule(after: gracePeriod) }
            }
        }
    }

    /// Ends the grace of ``stop(gracePeriod:)`` at once (an escalated stop): attempts still out
    /// stay pending and go again after the next start.
    package func cutStopShort() {
        loop.execute { [self] in drained?() }
    }

    // MARK: Delivering

    private func poll() {
        guard !isStopping else { return }
        let now = clock.now()
        for endpoint in settings.endpoints {
            for (index, source) in sources.enumerated() {
                let busy = inFlight.count { $0.endpoint == endpoint.name }
                let free = settings.maxConcurrentPerEndpoint - busy
                guard free > 0 else { break }
                let due: [DueWebhookDelivery]
                do {
                    due = try source.reader.dueDeliveries(endpoint: endpoint.name, at: now, limit: free + busy)
                } catch {
                    log.error("reading due webhook deliveries failed", error: error)
                    continue
                }
                for delivery in due.lazy.filter({ !self.inFlight.contains(DeliveryKey(source: index, endpoint: endpoint.name, outboxID: $0.event.id)) })
                    .prefix(free) {
                    attempt(delivery, to: endpoint, source: index)
                }
            }
        }
        prune(now: now)
        let timer = pollTimer ?? LoopTimer(loop: loop) { [self] in poll() }
        pollTimer = timer
        timer.schedule(after: Self.pollInterval)
    }

    /// Drops events older than the retention (with their deliveries) from each file that holds
    /// any, one bounded batch per file and `pruneInterval`, so a backlog left by a busy day
    /// drains in small writes instead of outgrowing a fixed rate.
    private func prune(now: UnixTime) {
        let cutoff = UnixTime(nanoseconds: now.nanoseconds - settings.retention.inNanoseconds)
        for (index, source) in sources.enumerated() where !pruning.contains(index) {
            guard lastPrune[index].map({ now - $0 >= Self.pruneInterval }) ?? true,
                  let oldest = try? source.reader.oldestEventCreatedAt(), oldest < cutoff else { continue }
            lastPrune[index] = now
            pruning.insert(index)
            source.write(.prune(createdBefore: cutoff, limit: Self.pruneBatch)) { [self] _ in
                loop.execute { [self] in pruning.remove(index) }
            }
        }
    }

    private func attempt(_ delivery: DueWebhookDelivery, to endpoint: WebhookSettings.Endpoint, source: Int) {
        let key = DeliveryKey(source: source, endpoint: endpoint.name, outboxID: delivery.event.id)
        inFlight.insert(key)
        outstanding += 1
        let request = Self.request(for: delivery.event, to: endpoint, at: clock.now())
        HTTP1ClientExchange.start(loop: loop, tls: endpoint.url.isTLS ? tls : nil, host: endpoint.url.host, port: endpoint.url.port,
                                  request: request, timeout: settings.requestTimeout) { [self] outcome in
            answered(delivery, key: key, outcome: outcome)
        }
    }

    private func answered(_ delivery: DueWebhookDelivery, key: DeliveryKey, outcome: HTTP1ClientExchange.Outcome) {
        outstanding -= 1
        guard !isAbandoning else { return }
        defer { if isStopping && outstanding == 0 { drained?() } }
        let succeeded = if case .status(let status) = outcome { (200..<300).contains(status) } else { false }
        let attempts = delivery.attempts + 1
        let now = clock.now()
        let decision = settings.retry.decide(succeeded: succeeded, attempts: attempts, createdAt: delivery.event.createdAt, now: now,
                                             using: &random)
        var update = WebhookDeliveryUpdate(endpoint: key.endpoint, outboxID: key.outboxID, attempts: attempts, nextAt: now, status: .pending)
        switch decision {
        case .delivered:
            update.status = .delivered
            counters[key.endpoint, default: Counters()].delivered += 1
        case .retry(let at):
            update.nextAt = at
            counters[key.endpoint, default: Counters()].failedAttempts += 1
            log.warning("webhook delivery to \(key.endpoint) failed (\(Self.describe(outcome))); attempt \(attempts), trying again in \(Int((at - now).inSeconds * 1000)) ms")
        case .dead:
            update.status = .dead
            counters[key.endpoint, default: Counters()].failedAttempts += 1
            counters[key.endpoint, default: Counters()].dead += 1
            log.error("webhook event \(delivery.event.eventID) to \(key.endpoint) is dead after \(attempts) attempts (\(Self.describe(outcome)))")
        }
        unsaved[key.source].append(update)
        scheduleFlush(after: .zero)
    }

    /// Writes the outcomes decided since the last flush, one write per source; their
    /// deliveries leave the in-flight set once it has committed. A failed write (a full disk)
    /// keeps them in flight and is made again a second later: a delivery the receiver already
    /// took is not sent again on every poll while the store refuses writes. The outcomes held
    /// are bounded by the in-flight slots (`maxConcurrentPerEndpoint` per endpoint), which they
    /// keep taken until saved; a shutdown meanwhile leaves them pending (sent again after the start).
    private func flush() {
        for (index, updates) in unsaved.enumerated() where !updates.isEmpty {
            unsaved[index] = []
            sources[index].write(.updateDeliveries(updates)) { [self] result in
                loop.execute { [self] in
                    if case .failure(let error) = result {
                        guard !isAbandoning else { return }
                        log.error("saving webhook delivery outcomes failed; they are saved again in a second", error: error)
                        unsaved[index] = updates + unsaved[index]
                        scheduleFlush(after: Self.saveRetryInterval)
                        return
                    }
                    for update in updates { inFlight.remove(DeliveryKey(source: index, endpoint: update.endpoint, outboxID: update.outboxID)) }
                }
            }
        }
    }

    private func scheduleFlush(after delay: Duration) {
        let timer = flushTimer ?? LoopTimer(loop: loop) { [self] in flush() }
        flushTimer = timer
        if !timer.isScheduled { timer.schedule(after: delay) }
    }

    /// The whole POST: `Connection: close`, the event id and type, and the signature.
    static func request(for event: StoredWebhookEvent, to endpoint: WebhookSettings.Endpoint, at now: UnixTime) -> [UInt8] {
        let timestamp = now.seconds
        let mac = HMACSHA256.mac(key: endpoint.secret, message: WebhookSignature.signedPayload(timestamp: timestamp, body: event.body))
        let head = """
            POST \(endpoint.url.target) HTTP/1.1\r
            Host: \(endpoint.url.authority)\r
            User-Agent: touchline-webhooks/1\r
            Content-Type: application/json\r
            Content-Length: \(event.body.count)\r
            Touchline-Event-Id: \(event.eventID)\r
            Touchline-Event-Type: \(event.type)\r
            \(WebhookSignature.headerName): \(WebhookSignature.headerValue(timestamp: timestamp, mac: mac))\r
            Connection: close\r
            \r

            """
        return Array(head.utf8) + event.body
    }

    private static func describe(_ outcome: HTTP1ClientExchange.Outcome) -> String {
        switch outcome {
        case .status(let status): "HTTP \(status)"
        case .failed(let reason): reason
        }
    }

    // MARK: Facts without a store change

    /// ``credentialsRejected(reason:pool:app:)`` for `app` as the closure an APNs exchange observer calls.
    package func credentialsReporter(app: String = AppChannelID.defaultApp) -> @Sendable (String, String) -> Void {
        { [self] reason, pool in credentialsRejected(reason: reason, pool: pool, app: app) }
    }

    /// APNs rejected the credentials of `app` (`reason`, on pool `pool`): one event per reason
    /// and app per five minutes, written on its own to the personal outbox. Another app than
    /// `default` is named in `app`.
    func credentialsRejected(reason: String, pool: String, app: String = AppChannelID.defaultApp) {
        recordAlert(.apnsCredentialsRejected, throttledBy: AppChannelID.qualified(reason, app: app),
                    [.init("reason", .string(reason)), .init("pool", .string(pool))] + AppChannelID.member(naming: app))
    }

    /// APNs refused a channel create for the app's channel limit: one event per app per five
    /// minutes (every create meets the limit until channels are deleted), written on its own to
    /// the personal outbox. `channelID` is the kept id: the event names its app apart.
    package func channelLimitReached(channelID: String) {
        let (app, id) = AppChannelID.split(channelID)
        recordAlert(.channelLimitReached, throttledBy: AppChannelID.qualified("channel.limit_reached", app: app),
                    [.init("channelId", .string(id))] + AppChannelID.member(naming: app))
    }

    /// Records an event of `type` on its own in the personal outbox, unless one with the same
    /// throttle key went within the last five minutes.
    private func recordAlert(_ type: WebhookEventType, throttledBy key: String, _ data: [JSONValue.Member]) {
        loop.execute { [self] in
            guard !isStopping, alerts.admit(key, now: clock.now()), let personal = sources.last else { return }
            personal.write(outbox.record(type, data)) { [self] result in
                if case .failure(let error) = result { log.error("recording the \(type.rawValue) webhook event failed", error: error) }
            }
        }
    }

    // MARK: Reading

    /// Per endpoint: the counters since the start and the backlog in both outboxes (on this loop).
    package func snapshot(_ done: @escaping @Sendable (WebhookSnapshot) -> Void) {
        loop.execute { [self] in
            var endpoints: [WebhookSnapshot.Endpoint] = []
            for endpoint in settings.endpoints {
                var backlog = WebhookEndpointBacklog()
                for source in sources {
                    guard let part = try? source.reader.backlog(endpoint: endpoint.name) else { continue }
                    backlog.pending += part.pending
                    backlog.dead += part.dead
                    if let oldest = part.oldestPendingAt { backlog.oldestPendingAt = min(backlog.oldestPendingAt ?? oldest, oldest) }
                }
                endpoints.append(.init(name: endpoint.name, counters: counters[endpoint.name] ?? Counters(), backlog: backlog))
            }
            done(WebhookSnapshot(endpoints: endpoints, now: clock.now()))
        }
    }

    /// A page of events from both outboxes after `cursor` (on this loop): see ``EventsCursor``.
    func events(after cursor: EventsCursor, limit: Int,
                _ done: @escaping @Sendable (Result<(events: [StoredWebhookEvent], next: EventsCursor), StoreError>) -> Void) {
        loop.execute { [self] in
            do throws(StoreError) {
                var pages: [Int: [StoredWebhookEvent]] = [:]
                for (index, source) in sources.enumerated() {
                    pages[index] = try source.reader.events(after: cursor.positions[index], limit: limit)
                }
                // One stream: each file's events in their own (commit) order, the two merged by
                // creation time, so the cursor only ever moves past a prefix of each file.
                let (page, last) = TimeOrderedMerge.merge(pages, limit: limit, time: \.createdAt)
                var next = cursor
                for (index, event) in last { next.positions[index] = event.id }
                done(.success((page, next)))
            } catch {
                done(.failure(error))
            }
        }
    }

    /// Runs `read` on this loop with the outboxes' readers (the channels' first, the personal
    /// file's last) and hands its result to `done`: a cluster gateway's share of `GET /v1/events`
    /// (`ClusterNode+Events.swift`).
    package func read<T: Sendable>(_ read: @escaping @Sendable ([any WebhookOutboxReader]) throws(StoreError) -> T,
                           _ done: @escaping @Sendable (Result<T, StoreError>) -> Void) {
        loop.execute { [self] in
            do throws(StoreError) { done(.success(try read(sources.map(\.reader)))) } catch { done(.failure(error)) }
        }
    }

    /// Closes the readers (after ``stop()``, before the stores close).
    package func close() {
        try? loop.sync { [self] in for source in sources { source.reader.close() } }
    }
}
