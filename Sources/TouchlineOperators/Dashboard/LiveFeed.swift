import TouchlineAccess
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// The dashboard's live feed, `GET /v1/stream`: Server-Sent Events carrying snapshots of the
/// gateway's figures (`GET /v1/stats`) and of the channels a client's key may see
/// (`GET /v1/channels/{id}/stats`), built by the same functions as those endpoints.
///
/// Each client gets a snapshot when it connects, then again whenever a channel changed (at most
/// every ``changeDelay``, so a burst of events costs one snapshot) and at least every
/// ``heartbeat`` (ages and rates move with time alone). The other loops' figures (APNs pools,
/// personal queue) are gathered once per heartbeat and reused by the snapshots in between.
/// Every snapshot is whole, so a client that falls behind is simply skipped until its socket
/// drains, and never needs a diff it missed.
///
/// Confined to the ingest loop with the ``ChannelService`` it reads (`@unchecked Sendable` only
/// so loop jobs can capture it).
final class LiveFeed: ChannelChangeWatcher, @unchecked Sendable {
    /// More clients are refused (503), so a dashboard left open in many tabs cannot make every
    /// snapshot cost more than the ingest loop can spare.
    static let maxClients = 32
    /// Streams kept for admin keys: provider keys together take at most the rest, so a provider
    /// (or a leaked provider key) can never lock operators out of their dashboard.
    static let reservedForAdmin = 8
    /// Streams one provider key may hold at once.
    static let maxPerProviderKey = 4
    static let heartbeat = Duration.seconds(1)
    static let changeDelay = Duration.milliseconds(100)
    /// A client with more unsent bytes than this misses snapshots until it catches up.
    static let maxBufferedBytes = 1 << 20

    private struct Client {
        var stream: HTTPResponseStream
        var key: GatewayConfiguration.APIKey
        /// The channel of a per-channel page: its snapshots carry that channel in `channel`.
        var channelID: String?
    }

    private unowned let service: ChannelService
    /// Where the global figures come from (`GET /v1/stats`, the other loops' snapshots).
    private unowned let operators: OperatorsAPI
    private var clients: [ObjectIdentifier: Client] = [:]
    private var heartbeatTimer: LoopTimer?
    private var changeTimer: LoopTimer?
    /// The other loops' figures, as of the last heartbeat (nil before the first gathering).
    private var loops: LoopSnapshots?

    init(service: ChannelService, operators: OperatorsAPI) {
        self.service = service
        self.operators = operators
    }

    /// Opens a stream for `request` and sends the first snapshot.
    func connect(_ request: HTTPRequest, key: GatewayConfiguration.APIKey, channelID: String?) throws(HTTPError) {
        try admit(key)
        var identifier: ObjectIdentifier?
        let opened = request.startStream(headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-store"),
                                                   ("X-Accel-Buffering", "no")]) { [weak self] in
            guard let self, let identifier else { return }
            clients[identifier] = nil
            if clients.isEmpty { stopTimers() }
        }
        guard let stream = opened else { return }
        identifier = ObjectIdentifier(stream)
        let client = Client(stream: stream, key: key, channelID: channelID)
        clients[ObjectIdentifier(stream)] = client
        // A reconnecting EventSource waits this long; the dashboard's own reader does the same.
        stream.write(Array("retry: 2000\n\n".utf8))
        if let loops {
            send(to: client, SnapshotContext(service: service, operators: operators, loops: loops))
        } else {
            refresh()
        }
        if heartbeatTimer == nil { startHeartbeat() }
    }

    /// Refuses a stream beyond the limits: all streams, provider keys' share, one key's own.
    private func admit(_ key: GatewayConfiguration.APIKey) throws(HTTPError) {
        func refuse(_ message: String) -> HTTPError {
            HTTPError(status: 503, code: "too_many_streams", message: message, headers: [("Retry-After", "5")])
        }
        guard clients.count < Self.maxClients else {
            throw refuse("the gateway already serves \(Self.maxClients) live streams; close a dashboard tab or retry later")
        }
        guard key.scope != .admin else { return }
        let providerStreams = clients.values.filter { $0.key.scope != .admin }
        guard providerStreams.count(where: { $0.key == key }) < Self.maxPerProviderKey else {
            throw refuse("this API key already has \(Self.maxPerProviderKey) live streams open; close one or retry later")
        }
        guard providerStreams.count < Self.maxClients - Self.reservedForAdmin else {
            throw refuse("provider keys already hold \(Self.maxClients - Self.reservedForAdmin) live streams (\(Self.reservedForAdmin) are kept for admin keys); retry later")
        }
    }

    /// Something about a channel changed: a snapshot goes out shortly (bursts coalesce).
    func channelChanged() {
        guard !clients.isEmpty else { return }
        let timer = changeTimer ?? LoopTimer(loop: service.loop) { [unowned self] in broadcast() }
        changeTimer = timer
        if !timer.isScheduled { timer.schedule(after: Self.changeDelay) }
    }

    private func startHeartbeat() {
        let timer = LoopTimer(loop: service.loop) { [unowned self] in
            refresh()
            heartbeatTimer?.schedule(after: Self.heartbeat)
        }
        heartbeatTimer = timer
        timer.schedule(after: Self.heartbeat)
    }

    /// The last client left: nothing runs until the next one, which gathers fresh figures.
    private func stopTimers() {
        heartbeatTimer?.cancel()
        heartbeatTimer = nil
        changeTimer?.cancel()
        loops = nil
    }

    /// Gathers the other loops' figures, then sends everyone a snapshot.
    private func refresh() {
        operators.gatherLoopSnapshots { [weak self] loops in
            guard let self, !clients.isEmpty else { return }
            self.loops = loops
            broadcast()
        }
    }

    private func broadcast() {
        changeTimer?.cancel()
        guard let loops else { return }
        let context = SnapshotContext(service: service, operators: operators, loops: loops)
        for client in clients.values where client.stream.bufferedBytes <= Self.maxBufferedBytes {
            send(to: client, context)
        }
    }

    private func send(to client: Client, _ context: SnapshotContext) {
        var bytes = Array("event: snapshot\ndata: ".utf8)
        bytes += context.snapshot(for: client.key, channelID: client.channelID).encoded
        bytes += Array("\n\n".utf8)
        client.stream.write(bytes)
    }
}

/// One moment's view of the gateway, shared by the snapshots of every client sent at that
/// moment: each channel and each key's global figures are built once, then each client gets
/// what its key may see.
private final class SnapshotContext {
    private let service: ChannelService
    private let operators: OperatorsAPI
    private let loops: LoopSnapshots
    private let now: UnixTime
    private var rows: [String: JSONValue] = [:]
    private var globals: [String: JSONValue] = [:]

    init(service: ChannelService, operators: OperatorsAPI, loops: LoopSnapshots) {
        self.service = service
        self.operators = operators
        self.loops = loops
        now = service.clock.now()
    }

    /// `{"time": <Unix seconds>, "stats": <GET /v1/stats>, "channels": [...], "channel": {...}}`.
    /// Each element of `channels` is the channel's `GET /v1/channels/{id}/stats` without its push
    /// history, plus the match `attributes`; `channel` (only for a per-channel client) is the
    /// same with the history, or null when that channel does not exist (or no longer).
    func snapshot(for key: GatewayConfiguration.APIKey, channelID: String?) -> JSONValue {
        let visible = service.channels.values.filter { APIAccess.allows(key, $0.id) }.sorted { $0.id < $1.id }
        var members: [JSONValue.Member] = [
            .init("time", .number(Double(now.nanoseconds) / 1e9)),
            .init("stats", globalStats(for: key)),
            .init("channels", .array(visible.map(row))),
        ]
        if let channelID {
            members.append(.init("channel", service.channels[channelID].map { view(of: $0, withHistory: true) } ?? .null))
        }
        return .object(members)
    }

    private func globalStats(for key: GatewayConfiguration.APIKey) -> JSONValue {
        if let stats = globals[key.key] { return stats }
        let stats = operators.statsJSON(visibleTo: key, loops: loops)
        globals[key.key] = stats
        return stats
    }

    private func row(_ channel: Channel) -> JSONValue {
        if let row = rows[channel.id] { return row }
        let row = view(of: channel, withHistory: false)
        rows[channel.id] = row
        return row
    }

    private func view(of channel: Channel, withHistory: Bool) -> JSONValue {
        let stats = channel.statsJSON(now: now)
        guard case .object(var members) = stats else { return stats }
        if !withHistory { members.removeAll { $0.name == "recentPushes" } }
        members.append(.init("attributes", channel.attributes?.json ?? .null))
        return .object(members)
    }
}
