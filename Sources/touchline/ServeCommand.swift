import Dispatch
import Foundation
import Touchline

/// `touchline serve`: runs the gateway until SIGINT or SIGTERM, then shuts it down gracefully.
enum ServeCommand {
    static let usage = """
        usage: touchline serve [--listen HOST:PORT] [--data-dir DIR] [--api-key KEY]

        Without Apple credentials the bundled mock APNs is started on loopback.
        Without --api-key an admin key is generated and printed.
        """

    static func run(arguments: [String]) async -> Int32 {
        let configuration: GatewayConfiguration
        do {
            configuration = try parse(arguments)
        } catch {
            printError("touchline serve: \(error)\n\(usage)")
            return 64
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

    /// Defaults plus the few flags this command knows; the full loader (file, environment,
    /// flags) replaces this function.
    static func parse(_ arguments: [String]) throws -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            guard let value = remaining.popFirst() else { throw ServeError("\(flag) needs a value") }
            switch flag {
            case "--listen":
                guard let colon = value.lastIndex(of: ":"), let port = Int(value[value.index(after: colon)...]) else {
                    throw ServeError("--listen must be HOST:PORT, got \(value)")
                }
                configuration.listenHost = String(value[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
                configuration.listenPort = port
            case "--data-dir":
                configuration.dataDirectory = value
            case "--api-key":
                configuration.apiKeys.append(.init(key: value, scope: .admin))
            default:
                throw ServeError("unknown option \(flag)")
            }
        }
        if configuration.apiKeys.isEmpty {
            let key = (0..<32).map { _ in String(UInt8.random(in: 0...15), radix: 16) }.joined()
            configuration.apiKeys = [.init(key: key, scope: .admin)]
            print("touchline: generated admin API key \(key)")
        }
        return configuration
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

struct ServeError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
