import CommandLineOptions
import Foundation
import LoadKit

/// The `touchline-load` command line: the scenarios as subcommands, the options every scenario
/// takes, and each scenario's own, declared once for the parser and the help text.
enum LoadCommandLine {
    enum Shared {
        static let check = OptionDeclaration.flag("--check", help: "exit 1 when a figure misses its target (ratios of earlier issues)")
        static let results = OptionDeclaration.value("--results", "DIR", help: "where result folders go (default: results)")
        static let noPinning = OptionDeclaration.flag("--no-pinning", help: "let every process run on any CPU (default: the mock APNs on "
                                                          + "CPUs of its own, standing for Apple's servers)")
        static let gatewayConfig = OptionDeclaration.value("--gateway-config", "FILE", help: "run the gateway with your configuration "
                                                               + "file (APNs is still the mock)")
        static let gatewayBinary = OptionDeclaration.value("--gateway-binary", "PATH", help: "measure this touchline executable "
                                                               + "instead of the one built beside")
    }

    /// `--name N`, with its help.
    private static func number(_ name: String, _ help: String) -> OptionDeclaration { .value(name, "N", help: help) }

    enum Matchday {
        static let matches = number("--matches", "concurrent matches (default 300)")
        static let matchSeconds = number("--match-seconds", "real seconds per match, the 90 minutes compressed (default 90)")
        static let halfTimeSeconds = number("--half-time-seconds", "real seconds of half time (default 8)")
        static let kickoffSpread = number("--kickoff-spread", "kickoffs spread over the first N seconds (default 10)")
        static let seed = number("--seed", "the schedule's random seed (default 1)")
    }

    enum Storm {
        static let tokens = number("--tokens", "push-to-start tokens following the kickoff's topic (default 1000000)")
        static let rounds = number("--rounds", "rounds of kickoff, h2load, matches alone, matches through a kickoff (default 3)")
        static let matches = number("--matches", "broadcasting match channels (default 500)")
        static let mockThreads = number("--mock-threads", "the mock's event loops (default: one per CPU it may use)")
        static let personalConnections = number("--personal-connections", "the gateway's personal queue connections, and h2load's "
                                                    + "(default: the gateway's default, 2)")
        static let personalInFlight = number("--personal-in-flight", "the gateway's personal sends in flight, and h2load's streams "
                                                 + "(default: the gateway's default, 1000)")
    }

    enum Burst {
        static let channels = number("--channels", "channels per phase (default 1000)")
        static let connections = number("--connections", "keep-alive connections of the burst (default 8)")
        static let batch = number("--batch", "events per request (default 100)")
        static let seconds = number("--seconds", "length of the burst and of the paced phase (default 10)")
    }

    enum ScaleOutOptions {
        static let channels = number("--channels", "channels per phase (default 200)")
        static let partitions = number("--partitions", "partitions of the cluster (default 16)")
        static let seconds = number("--seconds", "length of each burst, of the ceiling and of the paced phase (default 10)")
        static let kills = number("--kills", "kill -9 of a gateway of the failover pair, each timed until every channel of its "
                                      + "partitions was pushed again (default 20)")
        static let pauses = number("--pauses", "SIGSTOP of a gateway of the failover pair, timed the same way (default 20)")
        static let leaseTTL = number("--lease-ttl-ms", "the failover pair's lease TTL in milliseconds (default 1500)")
        static let registryTokens = number("--registry-tokens", "tokens of the partitioned registry's part, registry-scale-out's "
                                               + "figures (default 200000)")
        static let kickoffTokens = number("--kickoff-tokens", "push-to-start tokens of the kickoff fan-out's part, kickoff-storm's "
                                              + "figures (default 1000000)")
        static let kickoffRounds = number("--kickoff-rounds", "rounds of the kickoff fan-out's part (default 1)")
    }

    enum RegistryOptions {
        static let tokens = number("--tokens", "tokens registered through the cluster (default 10000000)")
        static let sample = number("--sample", "tokens of the SQLite baseline and of the one-subject-per-token layout (default 1000000)")
        static let partitions = number("--partitions", "registry partitions (default 64)")
        static let skipReferences = OptionDeclaration.flag("--skip-references", help: "registry-scale-out: only the two gateways and "
                                                               + "the replacement (the whole copy and the one gateway left out: a "
                                                               + "10-million run in about a third of the time)")
    }

    enum SoakOptions {
        static let seconds = number("--seconds", "how long the load runs, checks after the faults included (default 150)")
        static let kills = number("--kills", "kill -9 and restart of the gateway (default 3; 0 for none)")
        static let diskSeconds = number("--disk-seconds", "the disk stays full this long once writes are refused (default 5; 0: no "
                                            + "disk episode)")
        static let diskFault = OptionDeclaration.value("--disk-fault", "MODE", help: "auto (a tmpfs when it can be mounted, i.e. as "
                                                           + "root), tmpfs, or fault-file (the gateway's TOUCHLINE_STORE_FAULT_FILE hook)")
        static let seed = number("--seed", "the moments of the faults and the traffic's randomness (default 1)")
        static let channels = number("--channels", "channels taking events all run (default 20)")
        static let tokens = number("--tokens", "push-to-start tokens in each personal job's audience (default 1500)")
        static let slowClients = number("--slow-clients", "slow clients of each kind: trickled heads, stalled bodies, idle connections (default 4)")
        static let deadlines = OptionDeclaration.value("--http-deadlines", "H,B,I", help: "the gateway's head, body and idle deadlines "
                                                           + "in seconds (default 5,10,15)")
    }

    enum Hooks {
        static let rounds = number("--rounds", "rounds of the three phases (default 2)")
        static let matches = number("--matches", "broadcasting channels (default 200)")
        static let seconds = number("--seconds", "length of each phase (default 10)")
    }

    enum Exports {
        static let events = number("--events", "events of the recording exported (default 100000, a recording's most)")
        static let concurrent = number("--concurrent", "exports at once in the second phase (default 4)")
    }

    enum Ceiling {
        static let requests = number("--requests", "pushes per round (default 200000)")
        static let concurrency = number("--concurrency", "streams in flight (default 100)")
        static let rounds = number("--rounds", "rounds per client (default 5)")
        static let mockThreads = number("--mock-threads", "the mock's event loops (default: one per CPU it may use)")
    }

    private static func scenario(_ name: String, _ summary: String, _ options: [OptionDeclaration] = []) -> CommandDeclaration {
        CommandDeclaration(name: name, summary: summary, groups: options.isEmpty ? [] : [OptionGroup(nil, options)])
    }

    static let root = CommandDeclaration(
        name: "touchline-load", summary: "match-day load scenarios for Touchline",
        description: """
            Each scenario starts the gateway (touchline serve) and the mock APNs as processes of their own,
            TLS on loopback, measures, stops by itself, and writes result.json, summary.md and a chart
            (SVG) into a new folder under --results.
            """,
        sharedGroups: [OptionGroup("options of every scenario", [Shared.check, Shared.results, Shared.noPinning, Shared.gatewayConfig,
                                                                 Shared.gatewayBinary])],
        subcommands: [
            scenario("matchday", "N concurrent matches: clock ticks every second, stats, rare goals and cards, periods, final whistle and end",
                     [Matchday.matches, Matchday.matchSeconds, Matchday.halfTimeSeconds, Matchday.kickoffSpread, Matchday.seed]),
            scenario("kickoff-storm", "push-to-start to M tokens at kickoff while the match channels keep broadcasting, against "
                         + "h2load sending the same pushes",
                     [Storm.tokens, Storm.rounds, Storm.matches, Storm.mockThreads, Storm.personalConnections, Storm.personalInFlight]),
            scenario("ingest-burst", "maximum durable ingest rate, then ingest->APNs latency of paced events",
                     [Burst.channels, Burst.connections, Burst.batch, Burst.seconds]),
            scenario("client-ceiling", "Touchline's APNs client against h2load on the same mock, back to back",
                     [Ceiling.requests, Ceiling.concurrency, Ceiling.rounds, Ceiling.mockThreads]),
            scenario("merge-patch", "cost per member of a merge patch from 1,000 to 100,000 members (in-process)"),
            scenario("standard", "all five with their standard options (what `make bench` runs)"),
            scenario("webhook-isolation", "the same broadcast load without webhooks, with a receiver that never answers and with one "
                         + "that answers 500; p99 ratios (not part of standard)", [Hooks.rounds, Hooks.matches, Hooks.seconds]),
            scenario("export-memory", "a recording of 100,000 events exported once, then 4 times at once, while the gateway's "
                         + "resident set is sampled: at most 64 MiB above idle (not part of standard)",
                     [Exports.events, Exports.concurrent]),
            scenario("scale-out", "two gateways on a three-node NATS JetStream cluster: durable ingest against the cluster's own "
                         + "ceiling (a plain publisher, same messages), ingest->APNs, CPU per event against SQLite, failover over kills "
                         + "and pauses; then registry-scale-out and kickoff-storm, so that one run checks every figure of the "
                         + "cluster's cost (not part of standard)",
                     [ScaleOutOptions.channels, ScaleOutOptions.partitions, ScaleOutOptions.seconds, ScaleOutOptions.kills,
                      ScaleOutOptions.pauses, ScaleOutOptions.leaseTTL, ScaleOutOptions.registryTokens, ScaleOutOptions.kickoffTokens,
                      ScaleOutOptions.kickoffRounds]),
            scenario("token-registry", "the shared token registry of a cluster at 10 million tokens: registrations through the "
                         + "cluster against one SQLite file, the NATS servers' memory and disk per token against one subject per "
                         + "token, a new gateway's copy and its audience scans (not part of standard)",
                     [RegistryOptions.tokens, RegistryOptions.sample]),
            scenario("registry-partitions", "the partitioned token registry at 10 million tokens: registrations through one gateway "
                         + "owning every partition, half of them taken up by a new gateway from snapshots and logs, each gateway's files "
                         + "against the whole copy (not part of standard)",
                     [RegistryOptions.tokens, RegistryOptions.sample, RegistryOptions.partitions]),
            scenario("registry-scale-out", "the partitioned token registry in gateway processes: CPU per registration through one gateway "
                         + "and through two, a replaced gateway taking its share up (not part of standard)",
                     [RegistryOptions.tokens, RegistryOptions.partitions, RegistryOptions.skipReferences]),
            scenario("soak", "events, channel creates/ends/deletes and personal jobs under load while the gateway is killed with "
                         + "kill -9 at random moments, its disk filled and freed, and slow clients attached; checks every 202, "
                         + "APNs channels and job counts after each restart (not part of standard)",
                     [SoakOptions.seconds, SoakOptions.kills, SoakOptions.diskSeconds, SoakOptions.diskFault, SoakOptions.seed,
                      SoakOptions.channels, SoakOptions.tokens, SoakOptions.slowClients, SoakOptions.deadlines]),
        ],
        subcommandNoun: "scenario", helpListsSubcommandOptions: true)
}
