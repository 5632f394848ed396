import CommandLineOptions
import Foundation

/// The `touchline-mock-apns` command line, parsed into a configuration (kept in the library so
/// it can be tested). The options are declared once in ``declaration``; the parser and
/// ``usage`` both come from it.
public struct MockAPNsCommandLine: Sendable {
    public var configuration: MockAPNsConfiguration
    /// Where to write generated development certificates (nil = a temporary directory).
    public var certificateDirectory: String?
    /// Print the answer counters when stopping.
    public var printCounters: Bool
    /// `--help` was given: print ``usage`` and exit.
    public var showHelp: Bool

    enum Option {
        static let bundleID = OptionDeclaration.value("--bundle-id", "ID", help: "app bundle id; Live Activity topic is ID.push-type.liveactivity",
                                                      required: true)
        static let teamID = OptionDeclaration.value("--team-id", "ID", help: "team id expected as the JWT iss claim", required: true)
        static let key = OptionDeclaration.repeated("--key", "KEYID=PATH", help: "accepted signing key: a PEM public key or the .p8 "
                                                        + "private key; repeat for several keys", required: true)
        static let host = OptionDeclaration.value("--host", "ADDR", help: "numeric listen address (default 127.0.0.1)")
        static let pushPort = OptionDeclaration.value("--push-port", "N", help: "device/broadcast port, 0 = any free port (default 2197)")
        static let managementPort = OptionDeclaration.value("--management-port", "N", help: "channel management port, 0 = any free port (default 2195)")
        static let certificate = OptionDeclaration.value("--cert", "PATH", help: "server certificate chain (PEM); needs --cert-key")
        static let certificateKey = OptionDeclaration.value("--cert-key", "PATH", help: "server private key (PEM)")
        static let certificateDirectory = OptionDeclaration.value("--cert-dir", "DIR", help: "without --cert: write the generated "
                                                                      + "development CA and certificate here (default: a new temporary directory)")
        static let threads = OptionDeclaration.value("--threads", "N", help: "event loops serving connections (default: number of CPUs)")
        static let initialStreams = OptionDeclaration.value("--initial-streams", "N", help: "MAX_CONCURRENT_STREAMS before the first "
                                                                + "accepted request (default 1)")
        static let maxStreams = OptionDeclaration.value("--max-streams", "N", help: "MAX_CONCURRENT_STREAMS after it (default 1000)")
        static let channelLimit = OptionDeclaration.value("--channel-limit", "N", help: "live channels per app (default 10000)")
        static let channelsFile = OptionDeclaration.value("--channels-file", "PATH", help: "keep live channels in this JSON file across restarts")
        static let noDetailHeader = OptionDeclaration.flag("--no-detail-header", help: "do not add the diagnostic x-mock-apns-detail header to errors")
        static let unregistered = OptionDeclaration.repeated("--unregistered", "TOKEN", help: "answer pushes to this device token with "
                                                                 + "410 Unregistered; repeatable")
        static let unregisteredFile = OptionDeclaration.value("--unregistered-file", "PATH", help: "the same for every token in a file (one per line)")
        static let rate429 = OptionDeclaration.value("--rate-429", "X", help: "share 0..1 of requests answered 429 TooManyRequests")
        static let rate500 = OptionDeclaration.value("--rate-500", "X", help: "share 0..1 answered 500 InternalServerError")
        static let rate503 = OptionDeclaration.value("--rate-503", "X", help: "share 0..1 answered 503 Shutdown")
        static let faultEndpoints = OptionDeclaration.value("--fault-endpoints", "LIST", help: "endpoints the rates apply to, "
                                                                + "comma-separated, from device, broadcast, createChannel, readChannel, "
                                                                + "deleteChannel, listChannels (default device,broadcast)")
        static let latency = OptionDeclaration.value("--latency-ms", "N", help: "delay every response by N milliseconds")
        static let goawayAfter = OptionDeclaration.value("--goaway-after", "N", help: "send GOAWAY after N requests on a connection, then close it")
        static let goawayReason = OptionDeclaration.value("--goaway-reason", "TEXT", help: "reason in the GOAWAY payload (default Shutdown)")
        static let silentAfterClientGoaway = OptionDeclaration.flag("--silent-after-client-goaway", help: "once a client sends GOAWAY, "
                                                                        + "answer none of its streams still open (processed, never answered)")
        static let seed = OptionDeclaration.value("--seed", "N", help: "seed for the fault dice (default 1)")
        static let clockOffset = OptionDeclaration.value("--token-clock-offset", "S", help: "age provider tokens by a clock S seconds "
                                                             + "ahead (negative: behind), as if the client's clock were skewed")
        static let startTimestampTolerance = OptionDeclaration.value("--start-timestamp-tolerance", "S", help: "refuse a push-to-start "
                                                                         + "whose aps.timestamp is more than S seconds from the mock's "
                                                                         + "clock (400 BadRequestPayload; APNs does not check it)")
        static let printCounters = OptionDeclaration.flag("--print-counters", help: "print answer counts by endpoint, status and reason on exit")
        static let arrivalLatency = OptionDeclaration.value("--arrival-latency", "FIELD", help: "measure arrival latency from a "
                                                                + "Unix-nanosecond timestamp the sender puts in the payload as \"FIELD\": N "
                                                                + "(e.g. in the content-state) of accepted pushes")
    }

    /// Every option, grouped as the help text shows them.
    public static let declaration = CommandDeclaration(
        name: "touchline-mock-apns", summary: "a strict mock of Apple Push Notification service",
        description: """
            A strict mock of Apple Push Notification service: HTTP/2 over TLS, one port for device
            pushes and broadcasts, one for broadcast channel management. Runs until SIGINT or SIGTERM.
            """,
        groups: [
            OptionGroup("Identity (required)", [Option.bundleID, Option.teamID, Option.key]),
            OptionGroup("Network and TLS", [Option.host, Option.pushPort, Option.managementPort, Option.certificate, Option.certificateKey,
                                            Option.certificateDirectory, Option.threads]),
            OptionGroup("APNs limits", [Option.initialStreams, Option.maxStreams, Option.channelLimit, Option.channelsFile,
                                        Option.noDetailHeader]),
            OptionGroup("Faults", [Option.unregistered, Option.unregisteredFile, Option.rate429, Option.rate500, Option.rate503,
                                   Option.faultEndpoints, Option.latency, Option.goawayAfter, Option.goawayReason,
                                   Option.silentAfterClientGoaway, Option.seed,
                                   Option.clockOffset]),
            OptionGroup("Checks beyond APNs", [Option.startTimestampTolerance]),
            OptionGroup("Output", [Option.printCounters, Option.arrivalLatency]),
        ],
        epilogue: """
            Signals:
              SIGUSR1                   print the arrival report since the last one and start a new
                                        period: one line "arrival report: {json}" (per endpoint the
                                        answers by status; per endpoint and apns-priority the accepted
                                        pushes and, with --arrival-latency, their latencies, per
                                        second), then "arrival report end"
            """)

    /// The help text, generated from ``declaration``.
    public static var usage: String { HelpText.render(declaration) }

    /// Parses `arguments` (without the program name). Every problem is one line; misuse of the
    /// command line and settings the mock cannot serve alike.
    public static func parse(_ arguments: [String]) throws(MockAPNsSetupError) -> MockAPNsCommandLine {
        do {
            return try read(try CommandLineParser.parse(arguments, command: declaration))
        } catch let error as UsageError {
            throw MockAPNsSetupError(error.description)
        } catch let error as MockAPNsSetupError {
            throw error
        } catch {
            throw MockAPNsSetupError("\(error)")
        }
    }

    private static func read(_ parsed: ParsedArguments) throws -> MockAPNsCommandLine {
        var configuration = MockAPNsConfiguration(bundleID: "-", teamID: "-", keys: [], pushPort: 2197, managementPort: 2195,
                                                  threads: ProcessInfo.processInfo.activeProcessorCount, recordingCapacity: 0)
        var result = MockAPNsCommandLine(configuration: configuration, certificateDirectory: parsed.value(Option.certificateDirectory),
                                         printCounters: parsed.isSet(Option.printCounters), showHelp: parsed.helpRequested)
        if result.showHelp { return result }
        var keys: [MockAPNsConfiguration.ProviderKey] = []
        for value in parsed.values(Option.key) {
            guard let equals = value.firstIndex(of: "="), equals != value.startIndex, value.index(after: equals) != value.endIndex else {
                throw parsed.invalid(Option.key, "takes KEYID=PATH, got \(value)")
            }
            keys.append(.init(keyID: String(value[..<equals]), path: String(value[value.index(after: equals)...])))
        }
        if let host = parsed.value(Option.host) { configuration.host = host }
        configuration.pushPort = try parsed.integer(Option.pushPort, in: 0...65535) ?? configuration.pushPort
        configuration.managementPort = try parsed.integer(Option.managementPort, in: 0...65535) ?? configuration.managementPort
        configuration.certificateFile = try readableFile(Option.certificate, parsed)
        configuration.privateKeyFile = try readableFile(Option.certificateKey, parsed)
        configuration.threads = try parsed.integer(Option.threads, in: 1...256) ?? configuration.threads
        let streams = 1...Int(Int32.max)
        configuration.initialMaxConcurrentStreams = try parsed.integer(Option.initialStreams, in: streams) ?? configuration.initialMaxConcurrentStreams
        configuration.maxConcurrentStreams = try parsed.integer(Option.maxStreams, in: streams) ?? configuration.maxConcurrentStreams
        configuration.channelLimit = try parsed.integer(Option.channelLimit, in: 0...Int(Int32.max)) ?? configuration.channelLimit
        configuration.channelsFile = parsed.value(Option.channelsFile) ?? configuration.channelsFile
        if parsed.isSet(Option.noDetailHeader) { configuration.diagnosticHeader = false }
        configuration.faults.unregisteredTokens.formUnion(parsed.values(Option.unregistered))
        if let path = try readableFile(Option.unregisteredFile, parsed) {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            for line in text.split(whereSeparator: \.isNewline) where !line.trimmingCharacters(in: .whitespaces).isEmpty {
                configuration.faults.unregisteredTokens.insert(line.trimmingCharacters(in: .whitespaces))
            }
        }
        configuration.faults.tooManyRequestsRate = try parsed.number(Option.rate429, in: 0...1) ?? configuration.faults.tooManyRequestsRate
        configuration.faults.internalServerErrorRate = try parsed.number(Option.rate500, in: 0...1) ?? configuration.faults.internalServerErrorRate
        configuration.faults.shutdownRate = try parsed.number(Option.rate503, in: 0...1) ?? configuration.faults.shutdownRate
        if let list = parsed.value(Option.faultEndpoints) {
            var endpoints: Set<MockAPNsEndpoint> = []
            for name in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                guard let endpoint = MockAPNsEndpoint(rawValue: name), endpoint != .unknown else {
                    throw parsed.invalid(Option.faultEndpoints, "has unknown endpoint \(name)")
                }
                endpoints.insert(endpoint)
            }
            configuration.faults.rateEndpoints = endpoints
        }
        if let latency = try parsed.integer(Option.latency, in: 0...600_000) { configuration.faults.latency = .milliseconds(latency) }
        configuration.faults.goawayAfterRequests = try parsed.integer(Option.goawayAfter, in: 1...Int(Int32.max)) ?? configuration.faults.goawayAfterRequests
        configuration.faults.goawayReason = parsed.value(Option.goawayReason) ?? configuration.faults.goawayReason
        if parsed.isSet(Option.silentAfterClientGoaway) { configuration.faults.silentAfterClientGoaway = true }
        if let seed = try parsed.integer(Option.seed, in: 0...Int.max) { configuration.faults.seed = UInt64(seed) }
        if let offset = try parsed.integer(Option.clockOffset, in: -86_400...86_400) {
            configuration.faults.providerTokenClockOffset = .seconds(offset)
        }
        configuration.arrivalLatencyField = parsed.value(Option.arrivalLatency) ?? configuration.arrivalLatencyField
        if let tolerance = try parsed.integer(Option.startTimestampTolerance, in: 0...31_536_000) {
            configuration.startTimestampTolerance = .seconds(tolerance)
        }
        for key in keys where !FileManager.default.isReadableFile(atPath: key.path) {
            throw parsed.invalid(Option.key, "\(key.keyID): cannot read \(key.path)")
        }
        configuration.bundleID = parsed.value(Option.bundleID)!
        configuration.teamID = parsed.value(Option.teamID)!
        configuration.keys = keys
        try configuration.validate()
        result.configuration = configuration
        return result
    }

    /// The option's path, which must be a readable file; nil when not given.
    private static func readableFile(_ option: OptionDeclaration, _ parsed: ParsedArguments) throws(UsageError) -> String? {
        guard let path = parsed.value(option) else { return nil }
        guard FileManager.default.isReadableFile(atPath: path) else { throw parsed.invalid(option, "cannot read \(path)") }
        return path
    }
}
