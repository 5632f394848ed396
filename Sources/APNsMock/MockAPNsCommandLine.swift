import Foundation

/// The `touchline-mock-apns` command line, parsed into a configuration (kept in the library so
/// it can be tested).
public struct MockAPNsCommandLine: Sendable {
    public var configuration: MockAPNsConfiguration
    /// Where to write generated development certificates (nil = a temporary directory).
    public var certificateDirectory: String?
    /// Print the answer counters when stopping.
    public var printCounters: Bool
    /// `--help` was given: print ``usage`` and exit.
    public var showHelp: Bool

    public static let usage = """
    usage: touchline-mock-apns --bundle-id ID --team-id ID --key KEYID=PATH [options]

    A strict mock of Apple Push Notification service: HTTP/2 over TLS, one port for device
    pushes and broadcasts, one for broadcast channel management. Runs until SIGINT or SIGTERM.

    Identity (required):
      --bundle-id ID            app bundle id; Live Activity topic is ID.push-type.liveactivity
      --team-id ID              team id expected as the JWT iss claim
      --key KEYID=PATH          accepted signing key: a PEM public key or the .p8 private key;
                                repeat for several keys

    Network and TLS:
      --host ADDR               numeric listen address (default 127.0.0.1)
      --push-port N             device/broadcast port, 0 = any free port (default 2197)
      --management-port N       channel management port, 0 = any free port (default 2195)
      --cert PATH               server certificate chain (PEM); needs --cert-key
      --cert-key PATH           server private key (PEM)
      --cert-dir DIR            without --cert: write the generated development CA and
                                certificate here (default: a new temporary directory)
      --threads N               event loops serving connections (default: number of CPUs)

    APNs limits:
      --initial-streams N       MAX_CONCURRENT_STREAMS before the first accepted request (default 1)
      --max-streams N           MAX_CONCURRENT_STREAMS after it (default 1000)
      --channel-limit N         live channels per app (default 10000)
      --channels-file PATH      keep live channels in this JSON file across restarts
      --no-detail-header        do not add the diagnostic x-mock-apns-detail header to errors

    Faults:
      --unregistered TOKEN      answer pushes to this device token with 410 Unregistered; repeatable
      --unregistered-file PATH  the same for every token in a file (one per line)
      --rate-429 X              share 0..1 of requests answered 429 TooManyRequests
      --rate-500 X              share 0..1 answered 500 InternalServerError
      --rate-503 X              share 0..1 answered 503 Shutdown
      --fault-endpoints LIST    endpoints the rates apply to, comma-separated, from device,
                                broadcast,createChannel,readChannel,deleteChannel,listChannels
                                (default device,broadcast)
      --latency-ms N            delay every response by N milliseconds
      --goaway-after N          send GOAWAY after N requests on a connection, then close it
      --goaway-reason TEXT      reason in the GOAWAY payload (default Shutdown)
      --seed N                  seed for the fault dice (default 1)
      --token-clock-offset S    age provider tokens by a clock S seconds ahead (negative:
                                behind), as if the client's clock were skewed

    Output:
      --print-counters          print answer counts by endpoint, status and reason on exit
      --arrival-latency FIELD   measure arrival latency from a Unix-nanosecond timestamp the
                                sender puts in the payload as "FIELD": N (e.g. in the
                                content-state) of accepted pushes
      --help                    show this help

    Signals:
      SIGUSR1                   print the arrival report since the last one and start a new
                                period: one line "arrival report: {json}" (per endpoint the
                                answers by status; per endpoint and apns-priority the accepted
                                pushes and, with --arrival-latency, their latencies, per
                                second), then "arrival report end"
    """

    /// Parses `arguments` (without the program name).
    public static func parse(_ arguments: [String]) throws(MockAPNsSetupError) -> MockAPNsCommandLine {
        var parser = Parser(arguments: arguments)
        var bundleID: String?
        var teamID: String?
        var keys: [MockAPNsConfiguration.ProviderKey] = []
        var configuration = MockAPNsConfiguration(bundleID: "-", teamID: "-", keys: [], pushPort: 2197, managementPort: 2195,
                                                  threads: ProcessInfo.processInfo.activeProcessorCount, recordingCapacity: 0)
        var result = MockAPNsCommandLine(configuration: configuration, certificateDirectory: nil, printCounters: false, showHelp: false)
        while let flag = parser.next() {
            switch flag {
            case "--help", "-h": result.showHelp = true
            case "--bundle-id": bundleID = try parser.value(flag)
            case "--team-id": teamID = try parser.value(flag)
            case "--key":
                let value = try parser.value(flag)
                guard let equals = value.firstIndex(of: "="), equals != value.startIndex, value.index(after: equals) != value.endIndex else {
                    throw MockAPNsSetupError("--key takes KEYID=PATH, got \(value)")
                }
                keys.append(.init(keyID: String(value[..<equals]), path: String(value[value.index(after: equals)...])))
            case "--host": configuration.host = try parser.value(flag)
            case "--push-port": configuration.pushPort = try parser.integer(flag, in: 0...65535)
            case "--management-port": configuration.managementPort = try parser.integer(flag, in: 0...65535)
            case "--cert": configuration.certificateFile = try parser.readableFile(flag)
            case "--cert-key": configuration.privateKeyFile = try parser.readableFile(flag)
            case "--cert-dir": result.certificateDirectory = try parser.value(flag)
            case "--threads": configuration.threads = try parser.integer(flag, in: 1...256)
            case "--initial-streams": configuration.initialMaxConcurrentStreams = try parser.integer(flag, in: 1...Int(Int32.max))
            case "--max-streams": configuration.maxConcurrentStreams = try parser.integer(flag, in: 1...Int(Int32.max))
            case "--channel-limit": configuration.channelLimit = try parser.integer(flag, in: 0...Int(Int32.max))
            case "--channels-file": configuration.channelsFile = try parser.value(flag)
            case "--no-detail-header": configuration.diagnosticHeader = false
            case "--unregistered": configuration.faults.unregisteredTokens.insert(try parser.value(flag))
            case "--unregistered-file":
                let path = try parser.readableFile(flag)
                let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                for line in text.split(whereSeparator: \.isNewline) where !line.trimmingCharacters(in: .whitespaces).isEmpty {
                    configuration.faults.unregisteredTokens.insert(line.trimmingCharacters(in: .whitespaces))
                }
            case "--rate-429": configuration.faults.tooManyRequestsRate = try parser.rate(flag)
            case "--rate-500": configuration.faults.internalServerErrorRate = try parser.rate(flag)
            case "--rate-503": configuration.faults.shutdownRate = try parser.rate(flag)
            case "--fault-endpoints":
                let list = try parser.value(flag).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                var endpoints: Set<MockAPNsEndpoint> = []
                for name in list {
                    guard let endpoint = MockAPNsEndpoint(rawValue: name), endpoint != .unknown else {
                        throw MockAPNsSetupError("--fault-endpoints: unknown endpoint \(name)")
                    }
                    endpoints.insert(endpoint)
                }
                configuration.faults.rateEndpoints = endpoints
            case "--latency-ms": configuration.faults.latency = .milliseconds(try parser.integer(flag, in: 0...600_000))
            case "--goaway-after": configuration.faults.goawayAfterRequests = try parser.integer(flag, in: 1...Int(Int32.max))
            case "--goaway-reason": configuration.faults.goawayReason = try parser.value(flag)
            case "--seed": configuration.faults.seed = UInt64(try parser.integer(flag, in: 0...Int.max))
            case "--token-clock-offset":
                configuration.faults.providerTokenClockOffset = .seconds(try parser.integer(flag, in: -86_400...86_400))
            case "--print-counters": result.printCounters = true
            case "--arrival-latency": configuration.arrivalLatencyField = try parser.value(flag)
            default: throw MockAPNsSetupError("unknown option \(flag) (see --help)")
            }
        }
        if result.showHelp { return result }
        guard let bundleID else { throw MockAPNsSetupError("--bundle-id is required (see --help)") }
        guard let teamID else { throw MockAPNsSetupError("--team-id is required (see --help)") }
        guard !keys.isEmpty else { throw MockAPNsSetupError("at least one --key KEYID=PATH is required (see --help)") }
        for key in keys where !FileManager.default.isReadableFile(atPath: key.path) {
            throw MockAPNsSetupError("--key \(key.keyID): cannot read \(key.path)")
        }
        configuration.bundleID = bundleID
        configuration.teamID = teamID
        configuration.keys = keys
        try configuration.validate()
        result.configuration = configuration
        return result
    }

    private struct Parser {
        var arguments: [String]
        var index = 0

        mutating func next() -> String? {
            guard index < arguments.count else { return nil }
            defer { index += 1 }
            return arguments[index]
        }

        mutating func value(_ flag: String) throws(MockAPNsSetupError) -> String {
            guard let value = next() else { throw MockAPNsSetupError("\(flag) needs a value") }
            return value
        }

        mutating func integer(_ flag: String, in range: ClosedRange<Int>) throws(MockAPNsSetupError) -> Int {
            let text = try value(flag)
            guard let n = Int(text), range.contains(n) else {
                throw MockAPNsSetupError("\(flag) takes a whole number from \(range.lowerBound) to \(range.upperBound), got \(text)")
            }
            return n
        }

        mutating func rate(_ flag: String) throws(MockAPNsSetupError) -> Double {
            let text = try value(flag)
            guard let x = Double(text), (0...1).contains(x) else {
                throw MockAPNsSetupError("\(flag) takes a number from 0 to 1, got \(text)")
            }
            return x
        }

        mutating func readableFile(_ flag: String) throws(MockAPNsSetupError) -> String {
            let path = try value(flag)
            guard FileManager.default.isReadableFile(atPath: path) else { throw MockAPNsSetupError("\(flag): cannot read \(path)") }
            return path
        }
    }
}
