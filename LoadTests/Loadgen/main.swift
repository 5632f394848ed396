import Foundation
import LoadKit

/// `touchline-load`: match-day load scenarios for Touchline, run in a release build.
let usage = """
    usage: touchline-load <scenario> [options]

    Each scenario starts the gateway (touchline serve) and the mock APNs as processes of their own,
    TLS on loopback, measures, stops by itself, and writes result.json, summary.md and a chart
    (SVG) into a new folder under --results.

    scenarios:
      matchday        N concurrent matches: clock ticks every second, stats, rare goals and cards,
                      periods, final whistle and end
      kickoff-storm   push-to-start to M tokens at kickoff while the match channels keep broadcasting,
                      against h2load sending the same pushes
      ingest-burst    maximum durable ingest rate, then ingest->APNs latency of paced events
      client-ceiling  Touchline's APNs client against h2load on the same mock, back to back
      merge-patch     cost per member of a merge patch from 1,000 to 100,000 members (in-process)
      standard        all five with their standard options (what `make bench` runs)
      webhook-isolation
                      the same broadcast load without webhooks, with a receiver that never
                      answers and with one that answers 500; p99 ratios (not part of standard)
      soak            events, channel creates/ends/deletes and personal jobs under load while the
                      gateway is killed with kill -9 at random moments, its disk filled and freed,
                      and slow clients attached; checks every 202, APNs channels and job counts
                      after each restart (not part of standard)

    options of every scenario:
      --check                 exit 1 when a figure misses its target (ratios of earlier issues)
      --results DIR           where result folders go (default: results)
      --no-pinning            let every process run on any CPU (default: the mock APNs on CPUs
                              of its own, standing for Apple's servers)
      --gateway-config FILE   run the gateway with your configuration file (APNs is still the mock)
      --gateway-binary PATH   measure this touchline executable instead of the one built beside

    matchday:
      --matches N             concurrent matches (default 300)
      --match-seconds N       real seconds per match, the 90 minutes compressed (default 90)
      --half-time-seconds N   real seconds of half time (default 8)
      --kickoff-spread N      kickoffs spread over the first N seconds (default 10)
      --seed N                the schedule's random seed (default 1)
    kickoff-storm:
      --tokens N              push-to-start tokens following the kickoff's topic (default 1000000)
      --rounds N              rounds of kickoff, h2load, matches alone, matches through a kickoff (default 3)
      --matches N             broadcasting match channels (default 500)
      --mock-threads N        the mock's event loops (default: one per CPU it may use)
      --personal-connections N, --personal-in-flight N
                              the gateway's personal queue, and h2load's connections and streams
                              (default: the gateway's defaults, 2 and 1000)
    ingest-burst:
      --channels N            channels per phase (default 1000)
      --connections N         keep-alive connections of the burst (default 8)
      --batch N               events per request (default 100)
      --seconds N             length of the burst and of the paced phase (default 10)
    soak:
      --seconds N             how long the load runs, checks after the faults included (default 150)
      --kills N               kill -9 and restart of the gateway (default 3; 0 for none)
      --disk-seconds N        the disk stays full this long once writes are refused (default 5; 0: no
                              disk episode)
      --disk-fault MODE       auto (a tmpfs when it can be mounted, i.e. as root), tmpfs, or fault-file
                              (the gateway's TOUCHLINE_STORE_FAULT_FILE hook)
      --seed N                the moments of the faults and the traffic's randomness (default 1)
      --channels N            channels taking events all run (default 20)
      --tokens N              push-to-start tokens in each personal job's audience (default 1500)
      --slow-clients N        slow clients of each kind: trickled heads, stalled bodies, idle
                              connections (default 4)
      --http-deadlines H,B,I  the gateway's head, body and idle deadlines in seconds (default 5,10,15)
    webhook-isolation:
      --rounds N              rounds of the three phases (default 2)
      --matches N             broadcasting channels (default 200)
      --seconds N             length of each phase (default 10)
    client-ceiling:
      --requests N            pushes per round (default 200000)
      --concurrency N         streams in flight (default 100)
      --rounds N              rounds per client (default 5)
      --mock-threads N        the mock's event loops (default: one per CPU it may use)
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

    /// The value after `flag`, which must be there.
    mutating func value(after flag: String) -> String {
        index += 1
        guard index < arguments.count else { fail("\(flag) needs a value") }
        return arguments[index]
    }

    /// The value after `flag`, which must be a whole number, 0 or more.
    mutating func wholeNumber(after flag: String) -> Int {
        guard let value = Int(value(after: flag)), value >= 0 else { fail("\(flag) needs a whole number, 0 or more") }
        return value
    }

    /// The value after `flag`, which must be a positive whole number.
    mutating func positiveInteger(after flag: String) -> Int {
        guard let value = Int(value(after: flag)), value > 0 else { fail("\(flag) needs a positive whole number") }
        return value
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let scenario = arguments.first, scenario != "--help", scenario != "-h" else {
    print(usage)
    exit(arguments.isEmpty ? 64 : 0)
}
var flags = Flags(Array(arguments.dropFirst()))
var settings = LoadSettings()
var matchday = Matchday.Options()
var storm = KickoffStorm.Options()
var burst = IngestBurst.Options()
var ceiling = ClientCeiling.Options()
var soak = Soak.Options()
var hooks = WebhookIsolation.Options()
let scenarios = ["matchday", "kickoff-storm", "ingest-burst", "client-ceiling", "merge-patch", "standard", "soak", "webhook-isolation"]
guard scenarios.contains(scenario) else { fail("unknown scenario '\(scenario)' (try --help)") }

while let flag = flags.next() {
    switch (scenario, flag) {
    case (_, "--check"): settings.check = true
    case (_, "--results"): settings.resultsRoot = flags.value(after: flag)
    case (_, "--no-pinning"): settings.placement = .shared(cpus: ProcessInfo.processInfo.activeProcessorCount)
    case (_, "--gateway-config"): settings.gatewayConfig = flags.value(after: flag)
    case (_, "--gateway-binary"): settings.gatewayBinary = flags.value(after: flag)
    case ("matchday", "--matches"): matchday.schedule.matches = flags.positiveInteger(after: flag)
    case ("matchday", "--match-seconds"): matchday.schedule.matchSeconds = Double(flags.positiveInteger(after: flag))
    case ("matchday", "--half-time-seconds"): matchday.schedule.halfTimeSeconds = Double(flags.positiveInteger(after: flag))
    case ("matchday", "--kickoff-spread"): matchday.schedule.kickoffSpreadSeconds = Double(flags.positiveInteger(after: flag))
    case ("matchday", "--seed"): matchday.schedule.seed = UInt64(flags.positiveInteger(after: flag))
    case ("kickoff-storm", "--tokens"): storm.tokens = flags.positiveInteger(after: flag)
    case ("kickoff-storm", "--rounds"): storm.rounds = flags.positiveInteger(after: flag)
    case ("kickoff-storm", "--matches"): storm.matches = flags.positiveInteger(after: flag)
    case ("kickoff-storm", "--mock-threads"): storm.mockThreads = flags.positiveInteger(after: flag)
    case ("client-ceiling", "--mock-threads"): ceiling.mockThreads = flags.positiveInteger(after: flag)
    case ("kickoff-storm", "--personal-connections"): storm.personalConnections = flags.positiveInteger(after: flag)
    case ("kickoff-storm", "--personal-in-flight"): storm.personalInFlight = flags.positiveInteger(after: flag)
    case ("ingest-burst", "--channels"): burst.channels = flags.positiveInteger(after: flag)
    case ("ingest-burst", "--connections"): burst.connections = flags.positiveInteger(after: flag)
    case ("ingest-burst", "--batch"): burst.batchSize = flags.positiveInteger(after: flag)
    case ("ingest-burst", "--seconds"):
        burst.burstSeconds = Double(flags.positiveInteger(after: flag))
        burst.latencySeconds = burst.burstSeconds
    case ("soak", "--seconds"): soak.seconds = Double(flags.positiveInteger(after: flag))
    case ("soak", "--kills"): soak.kills = flags.wholeNumber(after: flag)
    case ("soak", "--disk-seconds"): soak.diskSeconds = Double(flags.wholeNumber(after: flag))
    case ("soak", "--disk-fault"):
        guard let choice = DiskFault.Choice(rawValue: flags.value(after: flag)) else { fail("--disk-fault takes auto, tmpfs or fault-file") }
        soak.diskFault = choice
    case ("soak", "--seed"): soak.seed = UInt64(flags.positiveInteger(after: flag))
    case ("soak", "--channels"): soak.channels = flags.positiveInteger(after: flag)
    case ("soak", "--tokens"): soak.tokens = flags.positiveInteger(after: flag)
    case ("soak", "--slow-clients"): soak.slowClientsPerKind = flags.wholeNumber(after: flag)
    case ("soak", "--http-deadlines"):
        let seconds = flags.value(after: flag).split(separator: ",").compactMap { Double($0) }
        guard seconds.count == 3, seconds.allSatisfy({ $0 > 0 }) else { fail("--http-deadlines takes three positive numbers of seconds: HEAD,BODY,IDLE") }
        soak.deadlines = SlowClients.Deadlines(head: seconds[0], body: seconds[1], idle: seconds[2])
    case ("webhook-isolation", "--rounds"): hooks.rounds = flags.positiveInteger(after: flag)
    case ("webhook-isolation", "--matches"): hooks.matches = flags.positiveInteger(after: flag)
    case ("webhook-isolation", "--seconds"): hooks.seconds = Double(flags.positiveInteger(after: flag))
    case ("client-ceiling", "--requests"): ceiling.requests = flags.positiveInteger(after: flag)
    case ("client-ceiling", "--concurrency"): ceiling.concurrency = flags.positiveInteger(after: flag)
    case ("client-ceiling", "--rounds"): ceiling.rounds = flags.positiveInteger(after: flag)
    default: fail("unknown option '\(flag)' for \(scenario) (try --help)")
    }
}
if let file = settings.gatewayConfig, !FileManager.default.isReadableFile(atPath: file) {
    fail("--gateway-config: cannot read \(file)")
}

let run = LoadRun(settings: settings)
switch scenario {
case "matchday": await run.finish([{ try Matchday(options: matchday, settings: settings).run() }])
case "kickoff-storm": await run.finish([{ try KickoffStorm(options: storm, settings: settings).run() }])
case "ingest-burst": await run.finish([{ try IngestBurst(options: burst, settings: settings).run() }])
case "client-ceiling": await run.finish([{ try await ClientCeiling(options: ceiling, settings: settings).run() }])
case "merge-patch": await run.finish([{ try MergePatchCost(options: MergePatchCost.Options()).run() }])
case "soak": await run.finish([{ try Soak(options: soak, settings: settings).run() }])
case "webhook-isolation": await run.finish([{ try WebhookIsolation(options: hooks, settings: settings).run() }])
default:
    // The standard set: every scenario with its defaults, client-ceiling with 3 rounds.
    var standardCeiling = ClientCeiling.Options()
    standardCeiling.rounds = 3
    await run.finish([
        { try await ClientCeiling(options: standardCeiling, settings: settings).run() },
        { try IngestBurst(options: IngestBurst.Options(), settings: settings).run() },
        { try Matchday(options: Matchday.Options(), settings: settings).run() },
        { try KickoffStorm(options: KickoffStorm.Options(), settings: settings).run() },
        { try MergePatchCost(options: MergePatchCost.Options()).run() },
    ])
}
