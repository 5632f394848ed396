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
      --channels N          channels per phase (default 1000)
      --connections N       keep-alive connections, one request at a time each (default 8)
      --batch N             events per request in the ingest phase (default 100)
      --seconds N           length of the ingest phase (default 10)
      --latency-seconds N   length of the latency phase (default 10)
      --rate N              events per second per channel in the latency phase (default 2)
      --check               exit 1 when ingest is below 50,000 events/s or the latency p99 above 5 ms
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("touchline-load: \(message)\n".utf8))
    exit(64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let scenario = arguments.first, scenario != "--help", scenario != "-h" else {
    print(usage)
    exit(arguments.isEmpty ? 64 : 0)
}
arguments.removeFirst()

switch scenario {
case "client-ceiling":
    var options = ClientCeiling.Options()
    var index = 0
    func number(_ name: String) -> Int {
        index += 1
        guard index < arguments.count, let value = Int(arguments[index]), value > 0 else {
            fail("\(name) needs a positive whole number")
        }
        return value
    }
    while index < arguments.count {
        switch arguments[index] {
        case "--requests": options.requests = number("--requests")
        case "--concurrency": options.concurrency = number("--concurrency")
        case "--rounds": options.rounds = number("--rounds")
        case "--body-bytes": options.bodyBytes = number("--body-bytes")
        case "--mock-threads": options.mockThreads = number("--mock-threads")
        case "--check": options.check = true
        case "--help", "-h": print(usage); exit(0)
        case let other: fail("unknown option '\(other)' (try --help)")
        }
        index += 1
    }
    do {
        exit(try await ClientCeiling(options: options).run() ? 0 : 1)
    } catch {
        FileHandle.standardError.write(Data("touchline-load: \(error)\n".utf8))
        exit(1)
    }
case "ingest":
    var options = IngestBenchmark.Options()
    var index = 0
    func number(_ name: String) -> Int {
        index += 1
        guard index < arguments.count, let value = Int(arguments[index]), value > 0 else {
            fail("\(name) needs a positive whole number")
        }
        return value
    }
    while index < arguments.count {
        switch arguments[index] {
        case "--channels": options.channels = number("--channels")
        case "--connections": options.connections = number("--connections")
        case "--batch": options.batchSize = number("--batch")
        case "--seconds": options.ingestSeconds = Double(number("--seconds"))
        case "--latency-seconds": options.latencySeconds = Double(number("--latency-seconds"))
        case "--rate": options.eventsPerChannelPerSecond = Double(number("--rate"))
        case "--check": options.check = true
        case "--help", "-h": print(usage); exit(0)
        case let other: fail("unknown option '\(other)' (try --help)")
        }
        index += 1
    }
    do {
        exit(try IngestBenchmark(options: options).run() ? 0 : 1)
    } catch {
        FileHandle.standardError.write(Data("touchline-load: \(error)\n".utf8))
        exit(1)
    }
default:
    fail("unknown scenario '\(scenario)' (try --help)")
}
