import ChildProcesses
import Foundation

/// Debian's `h2load` (nghttp2-client): the reference HTTP/2 client whose rate is the ceiling
/// our client is measured against.
enum H2Load {
    struct Result {
        var requestsPerSecond: Double
        var succeeded: Int
        var cpuSeconds: Double
    }

    /// Runs h2load with `requests` POSTs over `connections` connections and `concurrency` streams
    /// each, cycling through the URIs in `uriFile`, at CPU priority `niceness` on the CPUs `cpus`,
    /// and parses its summary.
    static func run(requests: Int, concurrency: Int, connections: Int, uriFile: String, bodyFile: String,
                    headers: [(String, String)], niceness: Int = 0, cpus: String? = nil) throws -> Result {
        guard let executable = ["/usr/bin/h2load", "/usr/local/bin/h2load"].first(where: FileManager.default.isExecutableFile) else {
            throw LoadError("h2load not found: install Debian's nghttp2-client")
        }
        let arguments = ["-n", String(requests), "-c", String(connections), "-m", String(concurrency), "-t", "1",
                         "-d", bodyFile, "-i", uriFile] + headers.flatMap { ["-H", "\($0.0): \($0.1)"] }
        let command = niceness > 0 ? pinned("/usr/bin/nice", ["-n", String(niceness), executable] + arguments, to: cpus)
                                   : pinned(executable, arguments, to: cpus)
        var usage = rusage()
        let before = childrenCPUSeconds(&usage)
        let (termination, text) = try ChildProcess.run(command.executable, command.arguments)
        guard termination == .exited(0),
              let rateLine = text.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
              let statusLine = text.split(separator: "\n").first(where: { $0.contains("2xx,") }) else {
            throw LoadError("h2load failed:\n\(text)")
        }
        // "finished in 1.23s, 162601.63 req/s, 58.43MB/s"
        let rate = rateLine.split(separator: ",").dropFirst().first?.split(separator: " ").first.flatMap { Double($0) } ?? 0
        // "status codes: 200000 2xx, 0 3xx, 0 4xx, 0 5xx"
        let ok = statusLine.split(separator: ":").last?.split(separator: " ").first.flatMap { Int($0) } ?? 0
        return Result(requestsPerSecond: rate, succeeded: ok, cpuSeconds: childrenCPUSeconds(&usage) - before)
    }

    private static func childrenCPUSeconds(_ usage: inout rusage) -> Double {
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
        return usage.ru_utime.seconds + usage.ru_stime.seconds
    }
}

extension timeval {
    var seconds: Double { Double(tv_sec) + Double(tv_usec) / 1e6 }
}
