import Foundation

/// `touchline serve` running as a separate process, so that the load generator and the gateway
/// do not share threads and the gateway's CPU time can be read on its own.
final class GatewayProcess {
    private let child: SiblingProcess
    /// The provider API's port on 127.0.0.1.
    let port: Int

    /// Starts `touchline serve` with `arguments`, which must include `--listen 127.0.0.1:0`, and
    /// waits for it to print the port it listens on.
    init(arguments: [String]) throws {
        let marker = "provider API on http://127.0.0.1:"
        child = try SiblingProcess("touchline", arguments: ["serve"] + arguments, readyMarker: marker)
        guard let port = child.line(containing: marker)?.components(separatedBy: marker).last?
            .split(separator: "/").first.flatMap({ Int($0) }) else {
            throw LoadError("cannot read the gateway's port from:\n\(child.startupOutput)")
        }
        self.port = port
    }

    var cpuSeconds: Double { child.cpuSeconds }
    var peakResidentBytes: Int { child.peakResidentBytes }
    func stop() { child.stop() }
}
