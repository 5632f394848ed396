import Dispatch
import NATS
import Synchronization
import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// The check at start that the servers' subject mapping spreads directly published events over
/// the gateways' partition count (``PartitionMappingProbe``): a count set in two places, the
/// servers' configuration and `store.partitions`, is refused at start naming both, rather than
/// found out as events that land on partitions nobody serves.
enum ClusterMappingCheck {
    /// How long the probes may take to land.
    static let wait: Duration = .seconds(2)
    /// Rounds tried before probes that keep going missing are reported.
    static let rounds = 3

    /// Probes the mapping and refuses a count other than `partitioning`'s. Blocking: from the
    /// starting thread; `loop` carries the probes' subscriptions and requests.
    static func run(prefix: String, partitioning: ChannelPartitioning, connection: any MessagingClient, loop: EventLoop,
                    log: GatewayLog) throws {
        var verdict = PartitionMappingProbe.Verdict.unmapped
        for _ in 0..<rounds {
            verdict = try probe(prefix: prefix, partitioning: partitioning, connection: connection, loop: loop)
            guard case .incomplete = verdict else { break }
        }
        switch verdict {
        case .agrees:
            return
        case .unmapped:
            log.notice("the NATS servers map nothing from \(prefix).in.* to the ingest stream: events published straight to the cluster are not taken (docs/scale-out.md)")
        case .mismatch(let serverCount?):
            throw GatewayError.startup("the NATS servers' subject mapping spreads \(prefix).in.* over \(serverCount) partitions, but store.partitions is \(partitioning.count): give both the same count (deploy/cluster/nats.conf, \"mappings\")")
        case .mismatch(nil):
            throw GatewayError.startup("the NATS servers' subject mapping puts \(prefix).in.* on ingest subjects that no partition count from 1 to 1024 explains, but store.partitions is \(partitioning.count): map it with {{partition(\(partitioning.count),1)}} (deploy/cluster/nats.conf, \"mappings\")")
        case .incomplete(let seen):
            throw GatewayError.startup("only \(seen) of \(PartitionMappingProbe.tokens.count) probes of the NATS servers' subject mapping (\(prefix).in.*) reached the ingest subjects within \(wait), \(rounds) times: check the mapping and the servers' health")
        }
    }

    /// One round: every probe published as a request to `<prefix>.in.<token>`, each caught on
    /// the ingest subject it lands on; a probe nobody takes is answered at once (no responders).
    private static func probe(prefix: String, partitioning: ChannelPartitioning, connection: any MessagingClient,
                              loop: EventLoop) throws -> PartitionMappingProbe.Verdict {
        let tokens = PartitionMappingProbe.tokens
        let outcome = Mutex<(landed: [String: Int], unanswered: Int)>(([:], 0))
        let done = DispatchSemaphore(value: 0)
        let settled: @Sendable (inout (landed: [String: Int], unanswered: Int)) -> Void = { state in
            if state.landed.count + state.unanswered == tokens.count { done.signal() }
        }
        let subscriptions = try loop.sync { () throws -> [any MessageSubscription] in
            try tokens.map { token in
                try connection.subscribe(to: "\(prefix).ingest.*.\(token)", loop: loop) { message in
                    let parts = message.subject.split(separator: ".")
                    guard parts.count >= 2, let partition = Int(parts[parts.count - 2]) else { return }
                    outcome.withLock { state in
                        guard state.landed.updateValue(partition, forKey: token) == nil else { return }
                        settled(&state)
                    }
                }
            }
        }
        let requests = try loop.sync { () throws -> NATSRequests in
            let requests = try NATSRequests(connection: connection, loop: loop)
            for token in tokens {
                requests.request(Array("mapping probe".utf8), to: "\(prefix).in.\(token)", timeout: wait) { result in
                    guard case .failure(.noResponders) = result else { return }
                    outcome.withLock { state in
                        state.unanswered += 1
                        settled(&state)
                    }
                }
            }
            return requests
        }
        _ = done.wait(timeout: .now() + .nanoseconds(Int(wait.inNanoseconds)))
        loop.execute { subscriptions.forEach { $0.cancel() }; withExtendedLifetime(requests) {} }
        return PartitionMappingProbe.verdict(landed: outcome.withLock { $0.landed }, partitioning: partitioning)
    }
}
