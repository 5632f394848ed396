import APNs
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlinePersonal
import TouchlineStore

/// The figures of the broadcast and personal loops, each read on its own loop.
struct LoopSnapshots: Sendable {
    /// Each app's broadcast and management figures, the default app first.
    var broadcastSnapshots: [APNsSnapshot]
    /// Each app's personal queue (on the personal loop), the default app first.
    var personalQueues: [PersonalSnapshot]

    /// The default app's broadcast figures: the gateway's own in the stats and readiness.
    var broadcast: APNsSnapshot { broadcastSnapshots[0] }
    /// The default app's personal queue: the gateway's own in the stats and metrics.
    var personal: PersonalSnapshot { personalQueues[0] }
    /// Every app's personal-pool figures, the default app first.
    var personalSnapshots: [APNsSnapshot] { personalQueues.map(\.apns) }
    var apnsPools: [APNsSnapshot.Pool] { broadcastSnapshots.flatMap(\.pools) + personalSnapshots.flatMap(\.pools) }

    /// The figures of `app` alone, as the only app: what a provider key of that app may see of
    /// the APNs answers, pools and queues (another app's are its provider's business). An app
    /// with no figures (not configured) keeps the `default` app's.
    func only(app: String) -> LoopSnapshots {
        LoopSnapshots(broadcastSnapshots: [broadcastSnapshots.first { $0.app == app } ?? broadcast],
                      personalQueues: [personalQueues.first { $0.apns.app == app } ?? personal])
    }
}

extension OperatorsAPI {
    /// Reads the broadcast loop's and then the personal loop's figures, each on its own loop
    /// (the hand-offs are `execute`); `done` runs on the ingest loop. Every app's dispatchers
    /// share these two loops.
    func gatherLoopSnapshots(_ done: @escaping @Sendable (LoopSnapshots) -> Void) {
        let apns = apnsMetrics
        let queues = service.apps.all.map(\.personal)
        let ingest = loop
        service.apps.all[0].dispatcher.apns.loop.execute {
            let broadcast = apns.map { $0.snapshot() }
            queues[0].loop.execute {
                let personal = queues.map { $0.metricsSnapshot() }
                ingest.execute { done(LoopSnapshots(broadcastSnapshots: broadcast, personalQueues: personal)) }
            }
        }
    }

    /// Every metric, named as docs/service.metrics.md lists them. Runs on the ingest loop, reading the
    /// channels directly and the other loops through `loops`.
    func metricFamilies(_ loops: LoopSnapshots) -> [MetricFamily] {
        let now = clock.now()
        service.metrics.channelLabels.release { channels[$0] == nil }
        // The oldest channels get the labels first, so which ones do is stable across scrapes.
        let ordered = channels.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }

        var channelCount = MetricFamily("touchline_channels", help: "Channels by status.", kind: .gauge)
        for status in ChannelStatus.allCases { channelCount.add(0, ["status": status.rawValue]) }
        var received = counter("touchline_events_received_total", "Events applied to a channel (each event of a batch, and end).")
        var duplicates = counter("touchline_events_duplicate_total", "Events acknowledged as repeats of the last seq (since the start).")
        var stateChanges = counter("touchline_state_changes_total", "Applied events that changed the channel's content-state.")
        var pushes = counter("touchline_pushes_sent_total", "Broadcast pushes sent to APNs, by apns-priority.")
        var coalesced = counter("touchline_updates_coalesced_total", "Pending updates replaced by a newer state before they were sent.")
        var deferrals = counter("touchline_rate_limit_deferrals_total", "Pushes that waited for the channel's rate limiter or back-off.")
        var lowDeferrals = counter("touchline_low_importance_deferrals_total",
                                   "Low-importance updates held for the channel's slower low-importance cadence.")
        var reserved = counter("touchline_reserved_pushes_total", "Critical pushes that went on the channel's critical reserve.")
        var feedStalled = MetricFamily("touchline_feed_stalled", help: "1 while the channel's live feed is stalled (no event for its feedStallSeconds).",
                                       kind: .gauge)
        var feedStalls = counter("touchline_feed_stalls_total", "Times the channel's live feed stalled (since the gateway started).")
        var feedGaps = counter("touchline_feed_gaps_total", "Jumps of the channel's seq: events numbered and never sent (since the gateway started).")
        var downgrades = counter("touchline_budget_downgrades_total",
                                 "Critical updates sent at priority 5 because the channel's priority-10 budget was spent.")
        var budget = MetricFamily("touchline_priority_budget_remaining", help: "Priority-10 pushes left in the channel's rolling hour.",
                                  kind: .gauge)
        var broadcastRetries: [String: Int] = [:]
        var pendingChannels = 0
        for channel in ordered {
            channelCount.add(1, ["status": channel.status.rawValue])
            let channelLabel = service.metrics.channelLabels.label(for: channel.id)
            let label: MetricLabels = ["channel": channelLabel]
            let counters = channel.engine.counters
            received.add(counters.eventsApplied, label)
            duplicates.add(channel.activity.duplicateEvents, label)
            stateChanges.add(counters.stateChanges, label)
            pushes.add(counters.immediatePushes, ["channel": channelLabel, "priority": "10"])
            pushes.add(counters.powerConsideratePushes, ["channel": channelLabel, "priority": "5"])
            coalesced.add(counters.coalesced, label)
            deferrals.add(counters.rateLimitDeferrals, label)
            lowDeferrals.add(counters.lowImportanceDeferrals, label)
            reserved.add(counters.reservedPushes, label)
            feedStalled.add(channel.feed.isStalled ? 1 : 0, label)
            feedStalls.add(channel.feed.stalls, label)
            feedGaps.add(channel.feed.gaps, label)
            downgrades.add(counters.budgetDowngrades, label)
            budget.add(channel.engine.priorityBudgetRemaining(now: now), label)
            broadcastRetries[channel.app, default: 0] += counters.retries + counters.throttled
            if channel.engine.pendingState != nil { pendingChannels += 1 }
        }

        var rejected = counter("touchline_events_rejected_total", "Event requests refused, by the API error code.")
        for (reason, count) in service.metrics.rejectedEvents.sorted(by: { $0.key < $1.key }) { rejected.add(count, ["reason": reason]) }

        var responses = counter("touchline_apns_responses_total",
                                "APNs answers by pool, HTTP status and reason (status \"none\": no answer, reason says why).")
        var responseTimes = MetricFamily("touchline_apns_response_seconds", help: "Time from handing a request to the pool to its APNs answer.",
                                         kind: .histogram)
        for snapshot in loops.broadcastSnapshots + loops.personalSnapshots {
            for (key, count) in snapshot.responses.sorted(by: { ($0.key.pool, $0.key.status, $0.key.reason) < ($1.key.pool, $1.key.status, $1.key.reason) }) {
                responses.add(count, ["app": snapshot.app, "pool": key.pool, "status": key.status, "reason": key.reason])
            }
            for (pool, histogram) in snapshot.responseTimes.sorted(by: { $0.key < $1.key }) { responseTimes.add(histogram, ["app": snapshot.app, "pool": pool]) }
        }
        var retries = counter("touchline_apns_retries_total", "Pushes sent again after a throttle, 5xx or lost answer, by app and pool.")
        for snapshot in loops.broadcastSnapshots { retries.add(broadcastRetries[snapshot.app] ?? 0, ["app": snapshot.app, "pool": "broadcast"]) }
        for queue in loops.personalQueues { retries.add(queue.retries, ["app": queue.apns.app, "pool": "personal"]) }
        var deactivated = counter("touchline_tokens_deactivated_total",
                                  "Registry tokens deactivated after a 410 (re-registered or already inactive tokens are not).")
        deactivated.add(loops.personal.tokensDeactivated)
        var deadLetters = counter("touchline_dead_letters_total", "Personal targets given up on, by reason.")
        for (reason, count) in loops.personal.deadLetters.sorted(by: { $0.key < $1.key }) { deadLetters.add(count, ["reason": reason]) }

        var queues = MetricFamily("touchline_queue_depth", help: "Items waiting, by queue.", kind: .gauge)
        queues.add(store.queueDepth, ["queue": "store"])
        queues.add(personalStore.queueDepth, ["queue": "personal_store"])
        queues.add(pendingChannels, ["queue": "broadcast_pending"])
        var inFlight = MetricFamily("touchline_apns_streams_in_flight", help: "HTTP/2 streams open to APNs, by pool.", kind: .gauge)
        var open = MetricFamily("touchline_apns_connections_open", help: "Connections to APNs that are ready or draining, by pool.", kind: .gauge)
        var maxStreams = MetricFamily("touchline_apns_max_concurrent_streams",
                                      help: "The server's current SETTINGS_MAX_CONCURRENT_STREAMS per connection.", kind: .gauge)
        for pool in loops.apnsPools {
            let connections = pool.stats.connections
            queues.add(pool.stats.waiting + connections.reduce(0) { $0 + $1.queued }, ["app": pool.app, "queue": "apns_\(pool.name)"])
            inFlight.add(connections.reduce(0) { $0 + $1.inFlight }, ["app": pool.app, "pool": pool.name])
            open.add(connections.filter { $0.state == .ready || $0.state == .draining }.count, ["app": pool.app, "pool": pool.name])
            for (index, connection) in connections.enumerated() where connection.remoteMaxConcurrentStreams > 0 {
                maxStreams.add(Double(connection.remoteMaxConcurrentStreams), ["app": pool.app, "pool": pool.name, "connection": String(index)])
            }
        }
        var tokenAge = MetricFamily("touchline_provider_token_age_seconds", help: "Age of the APNs provider token (JWT) in use, by app.", kind: .gauge)
        var skew = counter("touchline_provider_token_skew_rejections_total",
                           "ExpiredProviderToken answers for a token younger than an hour by the gateway's clock (clock skew), by app.")
        var hold = MetricFamily("touchline_provider_token_renewal_hold_seconds",
                                help: "Seconds until a new provider token may be signed while APNs rejects the current one (0: none), by app.",
                                kind: .gauge)
        for snapshot in loops.broadcastSnapshots {
            tokenAge.add((now - snapshot.providerTokenIssuedAt).inSeconds, ["app": snapshot.app])
            skew.add(snapshot.providerTokenStatistics.clockSkewSuspicions, ["app": snapshot.app])
            hold.add(max(0, snapshot.providerTokenRenewalHold.map { ($0 - now).inSeconds } ?? 0), ["app": snapshot.app])
        }
        var held = MetricFamily("touchline_apns_requests_held", help: "Requests held until the provider token may be renewed, by app and pool.",
                                kind: .gauge)
        for snapshot in loops.broadcastSnapshots + loops.personalSnapshots {
            held.add(snapshot.heldRequests, ["app": snapshot.app, "pool": snapshot.pools.first?.name ?? "unknown"])
        }
        var jobs = MetricFamily("touchline_personal_jobs", help: "Personal fan-out jobs, by status.", kind: .gauge)
        jobs.add(loops.personal.jobsRunning, ["status": "running"])
        var targets = MetricFamily("touchline_personal_targets_pending", help: "Fetched personal targets not yet sent, failed or expired.",
                                   kind: .gauge)
        targets.add(loops.personal.targetsPending)
        var slices = MetricFamily("touchline_personal_slices_running",
                                  help: "On a cluster: slices of the cluster's personal jobs this gateway runs now (those of its partitions).",
                                  kind: .gauge)
        slices.add(loops.personal.slicesRunning)
        var slicesStarted = counter("touchline_personal_slices_started_total",
                                    "On a cluster: slices of the cluster's personal jobs started here (from their start, or taken over from their last save).")
        slicesStarted.add(loops.personal.slicesStarted)
        var latency = MetricFamily("touchline_ingest_to_apns_seconds",
                                   help: "From accepting the oldest event a push carries to APNs accepting that push, by priority.",
                                   kind: .histogram)
        for priority in [ChannelEngine.Priority.immediate, .powerConsiderate] {
            latency.add(service.metrics.ingestToAPNs[priority] ?? Histogram(), ["priority": String(priority.rawValue)])
        }
        var mode = MetricFamily("touchline_apns_mode",
                                help: "Where pushes go: 1 for the mode in force (apple, or mock in development mode), 0 for the other.",
                                kind: .gauge)
        for candidate in [GatewayConfiguration.APNsMode.apple, .mock] { mode.add(candidate == apnsMode ? 1 : 0, ["mode": candidate.rawValue]) }
        var rateLimited = counter("touchline_api_rate_limited_total",
                                  "Provider API requests refused with 429 by their key's rate limit, by the key's scope (admin or channel prefix).")
        for (scope, count) in requestLimits.refusedByScope.sorted(by: { $0.key < $1.key }) { rateLimited.add(count, ["scope": scope]) }
        return [mode, rateLimited, channelCount, received, duplicates, rejected, stateChanges, pushes, coalesced, deferrals, lowDeferrals, reserved, feedStalled, feedStalls,
                feedGaps, downgrades, responses, retries,
                deactivated, deadLetters, queues, inFlight, open, maxStreams, budget, tokenAge, skew, hold, held, jobs, targets, slices, slicesStarted, latency,
                responseTimes]
    }

    private func counter(_ name: String, _ help: String) -> MetricFamily { MetricFamily(name, help: help, kind: .counter) }
}

