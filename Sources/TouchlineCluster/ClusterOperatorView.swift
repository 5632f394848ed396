import TouchlineChannels
import TouchlineCore
import TouchlineJetStream

/// What operators see of a cluster gateway (the `jetstream` store backend): in `/readyz`, its
/// NATS connection and the partitions it serves; on `/metrics`, the same as gauges, the
/// requests it handed to other gateways by outcome, what it did with partition snapshots, its
/// rounds of reconciliation with APNs' list-all, and how full each stream is. On the ingest loop.
struct ClusterOperatorView: BackendOperatorView {
    let cluster: ClusterNode
    /// How this gateway holds the token registry.
    let registry: ClusterRegistry

    /// Connected, and its lease writes stored: what ingest needs (``ClusterNode/leaseWritesFailing``).
    var takesRequests: Bool { cluster.isConnected && cluster.leaseWritesFailing == nil }

    /// The `cluster` member of `/readyz`.
    func readinessMember() -> JSONValue.Member? {
        .init("cluster", .object([
            .init("instance", .string(cluster.settings.instance.description)),
            .init("connected", .bool(cluster.isConnected)),
            .init("leaseWritesFailing", cluster.leaseWritesFailing.map { .string("for \($0.seconds) s: \($0.reason)") } ?? .null),
            .init("servedPartitions", .array(cluster.servedPartitions.map { .integer(Int64($0)) })),
            .init("partitions", .integer(Int64(cluster.partitioning.count))),
            .init("members", .array(cluster.liveMembers.map { .string($0.description) })),
            .init("registry", registryReadiness),
        ]))
    }

    /// The shared registry's copy (how far it is), or the registry partitions served here.
    private var registryReadiness: JSONValue {
        switch registry {
        case .shared(let shared):
            .object([.init("caughtUp", .bool(shared.isCaughtUp)), .init("applied", .integer(Int64(shared.appliedSequence))),
                     .init("catchUpTarget", .integer(Int64(shared.catchUpTarget.load(ordering: .acquiring))))])
        case .partitioned(let store):
            .object([.init("caughtUp", true), .init("servedPartitions", .array(store.registry.servedPartitions.map { .integer(Int64($0)) }))])
        }
    }

    func metricFamilies() -> [MetricFamily] {
        let name = cluster.settings.instance.description
        let instance: MetricLabels = ["instance": name]
        var connected = MetricFamily("touchline_cluster_connected",
                                     help: "1 while the gateway is connected to its NATS cluster; 0 while it reconnects (requests it must hand over answer 503).",
                                     kind: .gauge)
        connected.add(cluster.isConnected ? 1 : 0, instance)
        var served = MetricFamily("touchline_cluster_partitions_served",
                                  help: "Partitions whose channels this gateway runs now (it holds their leases and has read their logs).",
                                  kind: .gauge)
        served.add(cluster.servedPartitions.count, instance)
        var held = MetricFamily("touchline_cluster_channels_held",
                                help: "Channels whose stored state this gateway holds in memory: those of the partitions it serves or is taking up (a partition given up is dropped).",
                                kind: .gauge)
        held.add(cluster.store.heldChannels, instance)
        var partitions = MetricFamily("touchline_cluster_partitions",
                                      help: "Partitions the cluster's channels are spread over (store.partitions; the same on every gateway).",
                                      kind: .gauge)
        partitions.add(cluster.partitioning.count, instance)
        var members = MetricFamily("touchline_cluster_members", help: "Gateways this one counts as live members of the cluster, itself included.",
                                   kind: .gauge)
        members.add(cluster.liveMembers.count, instance)
        let registryFamilies = self.registryFamilies(instance: instance)
        var forwarded = MetricFamily("touchline_cluster_forwarded_requests_total",
                                     help: "Provider requests handed to the gateway owning their channel, by outcome (answered, no_owner, timeout, abandoned, not_sent, unreadable).",
                                     kind: .counter)
        for (outcome, count) in cluster.forwarded.sorted(by: { $0.key < $1.key }) {
            forwarded.add(count, ["instance": name, "outcome": outcome])
        }
        let counts = cluster.store.snapshotStatistics
        var snapshots = MetricFamily("touchline_cluster_snapshots_total",
                                     help: "Partition snapshots by outcome: written to a log in one message, written_in_parts (larger than the servers' max_payload), restored while reading one, failed (fenced or unanswered).",
                                     kind: .counter)
        for (outcome, count) in [("failed", counts.failed), ("restored", counts.restored), ("written_in_parts", counts.writtenInParts),
                                 ("written", counts.written - counts.writtenInParts)] {
            snapshots.add(count, ["instance": name, "outcome": outcome])
        }
        var trimmed = MetricFamily("touchline_cluster_log_messages_trimmed_total",
                                   help: "Partition log messages removed below a snapshot (a new owner reads from the snapshot on).",
                                   kind: .counter)
        trimmed.add(Int(clamping: counts.trimmedMessages), instance)
        var rounds = MetricFamily("touchline_cluster_reconcile_rounds_total",
                                  help: "Rounds of reconciliation with APNs' list-all run here (while this gateway holds partition 0), by outcome: complete, incomplete (a partition unaccounted for, or a gateway that did not answer), list_failed.",
                                  kind: .counter)
        var orphans = MetricFamily("touchline_cluster_orphans_deleted_total",
                                   help: "APNs channels no gateway accounted for in two reconciliation rounds (orphans of lost creates), deleted at Apple by this gateway.",
                                   kind: .counter)
        if let reconciler = cluster.reconciler {
            for outcome in ["complete", "incomplete", "list_failed"] {
                rounds.add(reconciler.rounds[outcome] ?? 0, ["instance": name, "outcome": outcome])
            }
            orphans.add(reconciler.orphansDeleted, instance)
        }
        return [connected, served, held, partitions, members] + registryFamilies + [forwarded, snapshots, trimmed, rounds, orphans] + storageFamilies()
    }

    /// The shared registry's copy and compaction, or the registry partitions served here.
    private func registryFamilies(instance: MetricLabels) -> [MetricFamily] {
        let name = cluster.settings.instance.description
        var caughtUp = MetricFamily("touchline_cluster_registry_caught_up",
                                    help: "1 once this gateway's copy of the token registry has applied the log as far as it went at the start; 0 while it is built (token routes answer 503, slices here wait). Always 1 on a partitioned registry.",
                                    kind: .gauge)
        guard case .shared(let shared) = registry else {
            caughtUp.add(1, instance)
            var served = MetricFamily("touchline_cluster_registry_partitions_served",
                                      help: "Partitions of the partitioned token registry this gateway serves now (it holds their leases and has read their logs).",
                                      kind: .gauge)
            var seconds = MetricFamily("touchline_cluster_registry_takeover_seconds_total",
                                       help: "Seconds this gateway's take-ups of registry partitions spent on their newest snapshot (fetched and restored) and on the log's tail after it (fetched and applied).",
                                       kind: .counter)
            var bytes = MetricFamily("touchline_cluster_registry_takeover_bytes_total",
                                     help: "Bytes this gateway's take-ups of registry partitions read: snapshots restored, and the log's tail after them.",
                                     kind: .counter)
            if case .partitioned(let store) = registry {
                served.add(store.registry.servedPartitions.count, instance)
                let figures = store.registry.takeoverFigures
                for (part, spent, read) in [("snapshot", figures.snapshotSeconds, figures.snapshotBytes), ("tail", figures.tailSeconds, figures.tailBytes)] {
                    seconds.add(spent, ["instance": name, "part": part])
                    bytes.add(read, ["instance": name, "part": part])
                }
            }
            return [caughtUp, served, seconds, bytes]
        }
        caughtUp.add(shared.isCaughtUp ? 1 : 0, instance)
        let compaction = shared.compactionStatistics
        var registrySnapshots = MetricFamily("touchline_cluster_registry_snapshots_total",
                                             help: "Token registry snapshots by outcome: written by this gateway (as the holder of partition 0), restored into its copy (its file was behind the log's start).",
                                             kind: .counter)
        registrySnapshots.add(compaction.written, ["instance": name, "outcome": "written"])
        registrySnapshots.add(compaction.restored, ["instance": name, "outcome": "restored"])
        var registryTrimmed = MetricFamily("touchline_cluster_registry_entries_trimmed_total",
                                           help: "Token registry log entries this gateway trimmed below a snapshot.", kind: .counter)
        registryTrimmed.add(Int(clamping: compaction.trimmedEntries), instance)
        return [caughtUp, registrySnapshots, registryTrimmed]
    }

    /// Each stream's and bucket's size against its limit, as last read (the cluster's, so every
    /// gateway reports the same; the alerts take the largest).
    private func storageFamilies() -> [MetricFamily] {
        var bytes = MetricFamily("touchline_cluster_stream_bytes",
                                 help: "Bytes a stream or bucket of the cluster holds (on each of its servers), as last read.", kind: .gauge)
        var limit = MetricFamily("touchline_cluster_stream_limit_bytes",
                                 help: "The size limit the gateways gave the stream or bucket (store.limits); writes past it are refused.", kind: .gauge)
        var messages = MetricFamily("touchline_cluster_stream_messages", help: "Messages a stream or bucket of the cluster holds, as last read.",
                                    kind: .gauge)
        let name = cluster.settings.instance.description
        for reading in cluster.storage.readings {
            let labels: MetricLabels = ["instance": name, "stream": reading.stream]
            bytes.add(Int(clamping: reading.bytes), labels)
            limit.add(reading.limitBytes, labels)
            messages.add(Int(clamping: reading.messages), labels)
        }
        return [bytes, limit, messages]
    }
}
