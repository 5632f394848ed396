import Foundation

/// `touchline-load`: benchmarks for Touchline, run in a release build.
let usage = """
    usage: touchline-load <scenario> [options]

    scenarios:
      client-ceiling   Touchline's APNs client versus h2load against the same mock APNs process:
                       device pushes with unique token paths over one connection, rounds
                       alternating, medians and their ratio printed

    options (client-ceiling):
      --requests N       pushes per round (default 200000)
      --concurrency N    streams in flight (default 100)
      --rounds N         rounds per client (default 5)
      --body-bytes N     payload size (default 300)
      --mock-threads N   event loops of the mock server (default 1)
      --check            exit 1 when the ratio is below the target (0.8)
      --help             show this text

      ingest           the gateway (touchline serve) as its own process, pushing to the mock APNs over
                       TLS on loopback: durable ingest rate of event batches over keep-alive HTTP/1.1,
                       then ingest->APNs latency of paced events whose pushes the rate limit lets through

    options (ingest):
      --channels N              channels per phase (default 1000)
      --connections N           keep-alive connections in the ingest phase, one request at a
                                time each (default 8)
      --latency-connections N   connections in the latency phase (default 8)
      --batch N                 events per request in the ingest phase (default 100)
      --seconds N               length of the ingest phase (default 10)
      --latency-seconds N       length of the latency phase (default 10)
      --rate N                  events per second per channel in the latency phase (default 2)
      --check                   exit 1 when ingest is below 50,000 events/s, the latency p99
                                is above 5 ms or a broadcast is missing

      personal-fanout  the gateway and the mock APNs as separate processes: N push-to-start tokens
                       registered in batches, then one personal job to all of them (POST /v1/personal,
                       polled until done) versus h2load with the same payload, token paths and
                       concurrency, rounds alternating; then the broadcast ingest->APNs p99 while
                       such a backlog drains versus with no backlog

    options (personal-fanout):
      --tokens N                tokens following the job's topic (default 1000000)
      --rounds N                rounds of gateway job and h2load (default 3)
      --isolation-rounds N      rounds of the two isolation phases, medians compared (default 2)
      --batch N                 tokens per POST /v1/tokens/batch (default 5000)
      --channels N              broadcast channels per isolation phase (default 100)
      --rate N                  events per second per channel in the isolation phases (default 2)
      --latency-connections N   connections posting those events (default 8)
      --mock-threads N          event loops of the mock (default: number of CPUs)
      --personal-connections N  the gateway's personal pool connections, and h2load's (default 2)
      --personal-in-flight N    the gateway's personal sends in flight, h2load's streams in all
                                (default 1000)
      --check                   exit 1 when the gateway is below 0.7 of h2load's rate, the p99
                                with the backlog is above 1.5 times the p99 without, a
                                broadcast is missing or the backlog drained before the events ended
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("touchline-load: \(message)\n".utf8))
    exit(64)
}

/// The options after the scenario name, read one flag at a time.
struct Flags {
    private var arguments: [String]
    private var index = -1

    init(_ arguments: [String]) { self.arguments = arguments }

    /// The next flag; `--help` prints the usage and exits.
    mutating func next() -> String? {
        index += 1
        guard index < arguments.count else { return nil }
        if arguments[index] == "--help" || arguments[index] == "-h" {
            print(usage)
            exit(0)
        }
        return arguments[index]
    }

    /// The value after `flag`, which must be a positive whole number.
    mutating func positiveInteger(after flag: String) -> Int {
        index += 1
        guard index < arguments.count, let value = Int(arguments[index]), value > 0 else {
            fail("\(flag) needs a positive whole number")
        }
        return value
    }
}

/// Runs a scenario and exits 0 when it passed (or was not asked to check), 1 otherwise.
func finish(_ scenario: () async throws -> Bool) async -> Never {
    do {
        exit(try await scenario() ? 0 : 1)
    } catch {
        FileHandle.standardError.write(Data("touchline-load: \(error)\n".utf8))
        exit(1)
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let scenario = arguments.first, scenario != "--help", scenario != "-h" else {
    print(usage)
    exit(arguments.isEmpty ? 64 : 0)
}
var flags = Flags(Array(arguments.dropFirst()))

switch scenario {
case "client-ceiling":
    var options = ClientCeiling.Options()
    while let flag = flags.next() {
        switch flag {
        case "--requests": options.requests = flags.positiveInteger(after: flag)
        case "--concurrency": options.concurrency = flags.positiveInteger(after: flag)
        case "--rounds": options.rounds = flags.positiveInteger(after: flag)
        case "--body-bytes": options.bodyBytes = flags.positiveInteger(after: flag)
        case "--mock-threads": options.mockThreads = flags.positiveInteger(after: flag)
        case "--check": options.check = true
        default: fail("unknown option '\(flag)' (try --help)")
        }
    }
    await finish { try await ClientCeiling(options: options).run() }
case "ingest":
    var options = IngestBenchmark.Options()
    while let flag = flags.next() {
        switch flag {
        case "--channels": options.channels = flags.positiveInteger(after: flag)
        case "--connections": options.connections = flags.positiveInteger(after: flag)
        case "--latency-connections": options.latencyConnections = flags.positiveInteger(after: flag)
        case "--batch": options.batchSize = flags.positiveInteger(after: flag)
        case "--seconds": options.ingestSeconds = Double(flags.positiveInteger(after: flag))
        case "--latency-seconds": options.latencySeconds = Double(flags.positiveInteger(after: flag))
        case "--rate": options.eventsPerChannelPerSecond = Double(flags.positiveInteger(after: flag))
        case "--check": options.check = true
        default: fail("unknown option '\(flag)' (try --help)")
        }
    }
    await finish { try IngestBenchmark(options: options).run() }
case "personal-fanout":
    var options = PersonalFanoutBenchmark.Options()
    while let flag = flags.next() {
        switch flag {
        case "--tokens": options.tokens = flags.positiveInteger(after: flag)
        case "--rounds": options.rounds = flags.positiveInteger(after: flag)
        case "--isolation-rounds": options.isolationRounds = flags.positiveInteger(after: flag)
        case "--batch": options.registrationBatch = flags.positiveInteger(after: flag)
        case "--channels": options.channels = flags.positiveInteger(after: flag)
        case "--rate": options.eventsPerChannelPerSecond = Double(flags.positiveInteger(after: flag))
        case "--latency-connections": options.latencyConnections = flags.positiveInteger(after: flag)
        case "--mock-threads": options.mockThreads = flags.positiveInteger(after: flag)
        case "--personal-connections": options.personalConnections = flags.positiveInteger(after: flag)
        case "--personal-in-flight": options.personalInFlight = flags.positiveInteger(after: flag)
        case "--check": options.check = true
        default: fail("unknown option '\(flag)' (try --help)")
        }
    }
    await finish { try PersonalFanoutBenchmark(options: options).run() }
default:
    fail("unknown scenario '\(scenario)' (try --help)")
}
