import CommandLineOptions
import Dispatch
import Foundation
import Synchronization
import Touchline
import TouchlineRuntime

/// `touchline serve`: runs the gateway until SIGINT or SIGTERM, then shuts it down gracefully;
/// with `--check-config`, only resolves and checks the configuration.
enum ServeCommand {
    static let checkConfig = OptionDeclaration.flag(
        "--check-config",
        help: "resolve the configuration as serve would, print every setting with its value and source (secrets redacted), "
            + "and exit: 0 if the gateway would start, 1 with its problems; opens no port and writes nothing")

    static let declaration = CommandDeclaration(
        name: "serve", summary: "run the gateway: provider API, store, APNs (the bundled mock in development mode)",
        description: """
            Settings come from defaults, then the JSON file given with --config, then TOUCHLINE_*
            environment variables, then these flags (see docs/configuration.md).
            """,
        groups: [OptionGroup("settings", GatewayConfiguration.commandLineOptions), OptionGroup("checks", [checkConfig])],
        epilogue: """
            Without Apple credentials the gateway refuses to start. Development mode (--dev,
            TOUCHLINE_DEV=1 or "apns": {"mode": "mock"}) sends to the bundled mock APNs instead, and
            generates and prints an admin key when none is given.
            """)

    static func run(_ commandLine: ParsedArguments) async -> Int32 {
        let checking = commandLine.isSet(checkConfig)
        let resolved: ResolvedConfiguration
        do {
            resolved = try GatewayConfiguration.resolve(commandLine: commandLine, environment: ProcessInfo.processInfo.environment)
        } catch {
            if checking {
                printError("touchline serve --check-config: the gateway would not start:\n\(error)")
                return 1
            }
            printError("touchline serve: invalid configuration:\n\(error)")
            return 64
        }
        if checking {
            print(resolved.report)
            print("configuration OK: touchline serve would start with these settings")
            return 0
        }
        var configuration = resolved.configuration
        let log = GatewayLog(component: "serve", level: configuration.logLevel)
        // Caught from here on, so a stop request during start-up still ends in an orderly
        // shutdown; a second one during the shutdown stops at once (still consistent).
        let requests = ShutdownRequests()
        let signals = ProcessSignals([(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")]) { name in
            if requests.reasons.isEmpty {
                log.notice("\(name) received, shutting down")
            } else {
                log.warning("\(name) received again, stopping now")
            }
            requests.request(name)
        }
        if configuration.apnsMode == .mock, configuration.apiKeys.isEmpty {
            let key = (0..<32).map { _ in String(UInt8.random(in: 0...15), radix: 16) }.joined()
            configuration.apiKeys = [.init(key: key, scope: .admin)]
            log.warning("no API key configured: generated development admin key \(key)")
        }
        // SIGHUP reads the configuration again and rotates the APNs key it names (docs/operations.md).
        let source: @Sendable () throws -> GatewayConfiguration = {
            try GatewayConfiguration.resolve(commandLine: commandLine, environment: ProcessInfo.processInfo.environment).configuration
        }
        let gateway = Gateway(configuration: configuration, log: log.named("gateway"), configurationSource: source)
        let reloads = ProcessSignals([(SIGHUP, "SIGHUP")]) { _ in
            log.notice("SIGHUP received: reloading the APNs key")
            gateway.reloadAPNsKey()
        }
        var stopping = ContinuousClock.now
        do {
            try await gateway.run(until: requests) { port in
                started(gateway, configuration: configuration, port: port, log: log)
            }
        } catch {
            log.error("cannot start", error: error)
            return 1
        }
        _ = (signals, reloads)
        stopping = requests.stoppedAt ?? stopping
        log.notice("stopped after \((ContinuousClock.now - stopping).formatted(.units(allowed: [.milliseconds])))")
        return 0
    }

    private static func started(_ gateway: Gateway, configuration: GatewayConfiguration, port: Int, log: GatewayLog) {
        log.notice("provider API on http://\(configuration.listenHost):\(port)/v1")
        log.info("data in \(configuration.dataDirectory)")
        if let mock = gateway.bundledMockAPNs?.addresses {
            log.warning("development mode: pushes go to the bundled mock APNs on \(mock.host) (push port \(mock.pushPort), "
                        + "management port \(mock.managementPort)), never to Apple; do not use it in production")
            if !GatewayConfiguration.isLoopback(configuration.listenHost) {
                log.warning("development mode listening on \(configuration.listenHost), beyond this machine")
            }
        } else if let apns = configuration.apns {
            log.notice("APNs \(apns.environment), bundle \(apns.bundleID)"
                       + (apns.broadcastHost.map { ", broadcasts to \($0)" } ?? ""))
        }
    }
}

/// Signals (SIGINT and SIGTERM to stop, SIGHUP to reload the APNs key) handed to a closure
/// instead of their default actions (ending the process). Dispatch sources, not signal handlers:
/// the default actions are turned off and the sources run on a queue of their own.
/// `@unchecked Sendable`: the sources are set up in `init` and afterwards only kept alive.
private final class ProcessSignals: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ signals: [(Int32, String)], _ received: @escaping @Sendable (String) -> Void) {
        let queue = DispatchQueue(label: "touchline.signals")
        sources = signals.map { number, _ in
            signal(number, SIG_IGN)
            return DispatchSource.makeSignalSource(signal: number, queue: queue)
        }
        for (source, (_, name)) in zip(sources, signals) {
            source.setEventHandler { received(name) }
            source.resume()
        }
    }
}
