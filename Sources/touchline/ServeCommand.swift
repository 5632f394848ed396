import Dispatch
import Foundation
import Touchline

/// `touchline serve`: runs the gateway until SIGINT or SIGTERM, then shuts it down gracefully.
enum ServeCommand {
    static var usage: String {
        """
        usage: touchline serve [options]

        Settings come from defaults, then the JSON file given with --config, then TOUCHLINE_*
        environment variables, then these flags (see docs/configuration.md):

        \(GatewayConfiguration.commandLineHelp)

        Without Apple credentials the bundled mock APNs is started on loopback; without any API
        key a development admin key is generated and printed.
        """
    }

    static func run(arguments: [String]) async -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return 0
        }
        var configuration: GatewayConfiguration
        do {
            configuration = try GatewayConfiguration.load(arguments: arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            printError("touchline serve: invalid configuration:\n\(error)")
            return 64
        }
        if configuration.apiKeys.isEmpty {
            let key = (0..<32).map { _ in String(UInt8.random(in: 0...15), radix: 16) }.joined()
            configuration.apiKeys = [.init(key: key, scope: .admin)]
            print("touchline: no API key configured: generated development admin key \(key)")
        }
        let gateway = Gateway(configuration: configuration)
        do {
            let port = try gateway.start()
            print("touchline: provider API on http://\(configuration.listenHost):\(port)/v1")
            print("touchline: data in \(configuration.dataDirectory)")
            if let mock = gateway.bundledMockAPNs?.addresses {
                print("touchline: no Apple credentials configured: using the bundled mock APNs on \(mock.host) "
                      + "(push port \(mock.pushPort), management port \(mock.managementPort))")
            } else if let apns = configuration.apns {
                print("touchline: APNs \(apns.environment), bundle \(apns.bundleID)")
            }
            // Supervisors and scripts read these lines from a pipe, where stdout is block-buffered.
            fflush(nil)
        } catch {
            printError("touchline serve: cannot start: \(error)")
            return 1
        }
        let signal = await waitForTerminationSignal()
        print("touchline: \(signal) received, shutting down")
        await gateway.shutdown()
        return 0
    }

    /// Suspends until SIGINT or SIGTERM arrives (handled by dispatch sources, not signal handlers).
    private static func waitForTerminationSignal() async -> String {
        await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            let queue = DispatchQueue(label: "touchline.signals")
            let once = SignalOnce(continuation)
            for (number, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { once.resume(name) }
                source.resume()
                once.keep(source)
            }
        }
    }
}

/// Resumes the waiting task on the first signal; keeps the signal sources alive. Used on the
/// signal queue only (and filled before any signal can be handled there).
private final class SignalOnce: @unchecked Sendable {
    private var continuation: CheckedContinuation<String, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init(_ continuation: CheckedContinuation<String, Never>) { self.continuation = continuation }

    func keep(_ source: any DispatchSourceSignal) { sources.append(source) }

    func resume(_ name: String) {
        continuation?.resume(returning: name)
        continuation = nil
    }
}
