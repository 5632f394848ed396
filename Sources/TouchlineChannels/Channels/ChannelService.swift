import APNs
import TouchlineAccess
import TouchlineConfiguration
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

/// The ingest side of the gateway: the channels, their engines, and the actions they ask for.
///
/// Everything here runs on the ingest loop (`@unchecked Sendable` only so loop jobs can capture
/// it). Store completions arrive on the writer's thread and hop back with `execute`; APNs
/// answers come back through ``BroadcastDispatcher``. The provider API is in `ChannelService+ChannelRoutes.swift`.
package final class ChannelService: @unchecked Sendable {
    package let loop: EventLoop
    /// Channels and their events.
    package let store: any ChannelStoreWriter
    /// Told how long commits and broadcasts wait, so that the personal queue yields when they wait long.
    let broadcastPressure: BroadcastPressure
    /// Each served app's dispatcher, personal queue and default policy, by name (`default`
    /// included); ``dispatcher(of:)`` and ``personal(of:)`` pick a channel's.
    package let apps: PerApp<AppChannels>
    /// The alert mode of channels created without `alerts` (`alerts.mode`).
    let defaultAlertMode: AlertMode
    /// Whether this gateway acts for a channel now: always on its own, per partition lease in a
    /// cluster (asked before every push).
    let ownership: any ChannelOwnership
    package let clock: any WallClock
    let log: GatewayLog
    package var channels: [String: Channel] = [:]
    /// Set at shutdown: no more pushes, timers or deletions; what is pending stays in the
    /// snapshots (a push in flight is saved as pending) and goes out after the next start.
    private(set) var isStopping = false
    /// The apps whose lost creates are being reconciled at start-up; their new creates wait
    /// (503) meanwhile, so their fresh APNs channels are never taken for orphans.
    var reconcilingApps: Set<String> = []
    /// Counters of the ingest loop not kept by the channels themselves.
    package var metrics: IngestMetrics
    /// Channels whose fire-and-forget save failed, saved again by a timer once the store takes
    /// writes (see `ChannelService+Saves.swift`).
    var channelsNeedingSave: [String: Channel] = [:]
    var saveRetryTimer: LoopTimer?
    /// Who is told when a channel changes: the dashboard's live feed, made by the first
    /// `GET /v1/stream` (the HTTP server ends its streams at shutdown).
    package var changeWatcher: (any ChannelChangeWatcher)?
    /// Where recording channels keep their feeds (the export reads them; a restore counts them).
    let recordings: any FeedRecordings
    /// The feed exports running, bounded in the gateway and per key (``FeedExports``).
    package let exports: FeedExports
    /// The disk recordings and shadow channels hold, per key and in all, against their quotas.
    package var recordingLedger: RecordingLedger
    /// Stores a rollover's start jobs in the personal queue and runs them (the job intake's
    /// ``PersonalJobIntake/storeRolloverStarts(_:completion:)``: this gateway's file, or the
    /// cluster's job bucket); set once at start.
    package var audienceStarter: (([PersonalJobRecord], @escaping @Sendable (Bool) -> Void) -> Void)?
    /// What each API key may still hold and ask for (``KeyLimits``): its channels, its
    /// kickoffs and rollovers, and the rollover interval of every channel.
    package var keyQuotas: KeyQuotas
    /// Webhook delivery (its own loop); nil in a gateway built without one. Channel facts are
    /// recorded with `webhooks.outbox` in the batches that change the channel.
    package let webhooks: WebhookDelivery?

    package init(loop: EventLoop, store: any ChannelStoreWriter, broadcastPressure: BroadcastPressure,
         apps: PerApp<AppChannels>, webhooks: WebhookDelivery? = nil, ownership: any ChannelOwnership = AllChannels(),
         recordings: any FeedRecordings, configuration: GatewayConfiguration, clock: any WallClock,
         log: GatewayLog) {
        self.loop = loop
        self.store = store
        self.broadcastPressure = broadcastPressure
        self.apps = apps
        self.ownership = ownership
        defaultAlertMode = configuration.alertMode
        self.clock = clock
        self.log = log
        metrics = IngestMetrics(maxChannelLabels: configuration.metrics.maxChannelLabels)
        self.webhooks = webhooks
        exports = FeedExports(limits: configuration.recordings)
        recordingLedger = RecordingLedger(limits: configuration.recordings, keys: configuration.apiKeys)
        self.recordings = recordings
        keyQuotas = KeyQuotas(keys: configuration.apiKeys, settings: configuration.keyLimits, now: clock.now())
    }

    // MARK: Restart

    /// Loads every channel from the store and resumes the live ones (sends what was pending,
    /// arms timers, finishes deletions that were due). `resumePersonalJobs` gets the APNs ids of
    /// the open channels once they are loaded and before any deletion closes a channel's kickoffs.
    package func restore(from reader: any ChannelStoreReader, resumePersonalJobs: (_ openChannels: Set<String>) -> Void) throws {
        let restored = try load(from: reader, recordingSizes: try recordings.sizes(of: reader) { _ in true }) { _ in true }
        // Queued on the personal loop before the API can hand it a new job, and before any
        // deletion below closes a channel's kickoffs.
        let open = Set(restored.filter { $0.status == .active }.compactMap(\.apnsChannelID))
        resumePersonalJobs(open)
        resume(restored)
        reconcileLostCreates()
    }

    /// Takes up the channels `belongs` picks (a partition this gateway now owns in a cluster),
    /// as they are in the store, and resumes them as a restart would. Creates whose answer was
    /// lost are created again: adopting orphans needs every partition's channels (see
    /// docs/cluster.md). `recordingSizes` are what their recordings hold, read beforehand off
    /// the loop (``FeedRecordings/sizes(of:where:)``).
    package func takeUp(from reader: any ChannelStoreReader, recordingSizes: [String: RecordingSize], where belongs: (String) -> Bool) throws {
        let restored = try load(from: reader, recordingSizes: recordingSizes, where: belongs)
        for channel in restored where channel.status == .active {
            guard let apnsID = channel.apnsChannelID else { continue }
            personal(of: channel).openKickoffs(into: apnsID)
            // A scheduled kickoff that started while the channel had no owner becomes its audience now.
            personal(of: channel).announceStartedKickoffs(into: apnsID)
        }
        resume(restored)
        for channel in restored where channel.lifecycle.awaitsReconciliation { handle(.lifecycle(.recreate), of: channel) }
    }

    /// Lets go of the channels `belongs` picks (a partition this gateway no longer owns): their
    /// timers stop and answers still coming for them are dropped. What they had not sent stays
    /// in the store for the next owner; requests waiting on them get 503 (retry: it reaches the
    /// next owner).
    ///
    /// The answers differ in what was done. Requests queued behind a channel's write were never
    /// written (`channel_moving`: nothing was done). A create waiting for its channel has its
    /// intent in the log or on its way there (`channel_moved`): the next owner, finding the
    /// intent, finishes the create, and the provider's retry then gets the channel with 200.
    package func letGo(where belongs: (String) -> Bool) {
        for (id, channel) in channels where belongs(id) {
            channel.cancelTimers()
            channels[id] = nil
            recordingLedger.remove(id)
            channelsNeedingSave[id] = nil
            for request in channel.lifecycle.waiters {
                request.respond(HTTPError.channelMoved(
                    "channel '\(id)' moved to another gateway while it was being created: its create may have been stored, "
                        + "and then the next owner finishes it; retry it (creates are idempotent by id: 201, or 200 with the channel)").response)
            }
            for request in channel.machine.gate.waiting.map(\.request) {
                request.respond(HTTPError.channelMoving("channel '\(id)' is moving to another gateway; nothing was stored; retry").response)
            }
        }
        changeWatcher?.channelChanged()
    }

    /// A channel of an app not configured here is left in the store, never loaded: it has no
    /// credentials to be served with, and must not reach another app's connections.
    private func load(from reader: any ChannelStoreReader, recordingSizes: [String: RecordingSize],
                      where belongs: (String) -> Bool) throws -> [Channel] {
        let now = clock.now()
        var restored: [Channel] = []
        var after: String?
        var unserved: [String: Int] = [:]
        defer {
            for (app, count) in unserved.sorted(by: { $0.key < $1.key }) {
                log.error("\(count) stored channels belong to app '\(app)', which is not configured: they are not served; their data stays")
            }
        }
        while true {
            let page = try reader.channels(after: after, limit: 500)
            guard let last = page.last else { break }
            for record in page where belongs(record.id) {
                let app = AppChannelID.app(of: record.id)
                guard serves(app: app) else {
                    unserved[app, default: 0] += 1
                    continue
                }
                let channel = Channel.restored(from: record, rolloverInterval: keyQuotas.settings.rolloverInterval, now: now)
                if let damage = channel.damage { log.error("channel restored as broken: \(damage)", channel: record.id) }
                if channel.recording != nil {
                    let size = recordingSizes[record.id] ?? RecordingSize()
                    (channel.recordedEvents, channel.recordedBytes) = (size.events, size.bytes)
                    // Every accepted event is recorded until the recording stops.
                    channel.recordingStopped = size.lastSeq < channel.lastSeq
                }
                channels[record.id] = channel
                recordingLedger.add(record.id, isShadow: channel.isShadow, records: channel.recording != nil, bytes: channel.recordedBytes,
                                    stopped: channel.recordingStopped)
                restored.append(channel)
            }
            after = last.id
        }
        return restored
    }

    /// Sends what was pending, arms the timers, resumes rollovers and asks again for deletions
    /// that were due (``ChannelMachine/Input/resumed``).
    private func resume(_ restored: [Channel]) {
        for channel in restored where channel.lifecycle.isLive { handle(.resumed, of: channel) }
    }

    /// Stops sending and cancels every timer (shutdown).
    package func stop() {
        isStopping = true
        let now = clock.now()
        for channel in channels.values { stop(channel, now: now) }
    }
}
