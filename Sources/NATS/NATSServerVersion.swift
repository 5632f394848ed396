import CNATS
import Glibc

/// A nats-server release, as its `INFO` greeting names it (`"version":"2.15.1"`).
///
/// The gateway refuses servers older than ``oldestSupported``: the cluster's guarantees rest on
/// server fixes that earlier releases lack (docs/cluster.md, "Server versions").
public struct NATSServerVersion: Comparable, Sendable, CustomStringConvertible {
    public let major: Int
    public let minor: Int
    public let patch: Int

    /// 2.11.0: the fixes to compare-and-set on replicated streams (the subject's expected last
    /// sequence, 2.9.21), to consumers after a filtered purge (2.9.12), and to expected sequences
    /// and leader completeness (2.10 to 2.11.0), and per-message TTLs (2.11.0).
    public static let oldestSupported = NATSServerVersion(major: 2, minor: 11, patch: 0)

    public init(major: Int, minor: Int, patch: Int) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// `2.15.1`, `v2.9.10`, `2.12.0-RC.1` (a pre-release counts as its release); nil otherwise.
    public init?(_ text: some StringProtocol) {
        let numbers = text.drop { $0 == "v" }.prefix { $0 != "-" && $0 != "+" }.split(separator: ".", omittingEmptySubsequences: false)
        guard numbers.count == 3, let major = Int(numbers[0]), let minor = Int(numbers[1]), let patch = Int(numbers[2]),
              major >= 0, minor >= 0, patch >= 0 else { return nil }
        self.init(major: major, minor: minor, patch: patch)
    }

    public static func < (a: NATSServerVersion, b: NATSServerVersion) -> Bool {
        (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch)
    }

    public var description: String { "\(major).\(minor).\(patch)" }

    /// The version in a server's `INFO {...}` line; nil when the line names none.
    public static func fromGreeting(_ line: some StringProtocol) -> NATSServerVersion? {
        guard line.hasPrefix("INFO "), let range = line.range(of: #""version":""#) else { return nil }
        return NATSServerVersion(line[range.upperBound...].prefix { $0 != "\"" })
    }

    /// The version server `url` (`nats://host:port`, `tls://…`, `host:port`, with or without
    /// `user:password@`) greets a new connection with, read from a plain TCP connection of its
    /// own: servers send `INFO` before any TLS. Blocking, within `timeout`: call it at start.
    public static func greeting(of url: String, timeout: Duration) throws(NATSError) -> NATSServerVersion {
        let operation = "read the version of NATS server \(url)"
        guard let (host, port) = hostAndPort(of: url) else {
            throw NATSError(status: NATS_ERR.rawValue, operation: operation, detail: "not a server URL")
        }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw NATSError(status: NATS_ERR.rawValue, operation: operation, detail: "cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        let descriptor = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard descriptor >= 0 else { throw NATSError(status: NATS_ERR.rawValue, operation: operation, detail: "no socket: errno \(errno)") }
        defer { close(descriptor) }
        var wait = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        guard connect(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            throw NATSError(status: NATS_ERR.rawValue, operation: operation, detail: "cannot connect: \(String(cString: strerror(errno)))")
        }
        // The greeting is one line of a few hundred bytes; 64 KiB bounds a server that sends more.
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !line.contains(UInt8(ascii: "\n")), line.count < 65_536 {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            line += buffer[0..<count]
        }
        let greeting = String(decoding: line.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        guard let version = fromGreeting(greeting) else {
            throw NATSError(status: NATS_ERR.rawValue, operation: operation, detail: "no version in its greeting: \(greeting.prefix(120))")
        }
        return version
    }

    /// Refuses, naming the server and both versions, when one of `servers` runs a release older
    /// than ``oldestSupported``. A server that does not answer is left to the connection, which
    /// names it if none can be reached.
    public static func requireSupported(_ servers: [String], timeout: Duration) throws(NATSError) {
        for url in servers {
            guard let version = try? greeting(of: url, timeout: timeout), version < oldestSupported else { continue }
            throw NATSError(status: NATS_NOT_PERMITTED.rawValue, operation: "check the NATS servers' version",
                            detail: "\(url) runs nats-server \(version), older than \(oldestSupported), the oldest Touchline runs on: "
                                + "its fencing and job bucket rely on compare-and-set and purge fixes of later releases "
                                + "(docs/cluster.md, \"Server versions\")")
        }
    }

    /// The host and port of a server URL (port 4222 when it names none).
    static func hostAndPort(of url: String) -> (host: String, port: Int)? {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if let credentials = rest.lastIndex(of: "@") { rest = rest[rest.index(after: credentials)...] }
        rest = rest.prefix { $0 != "/" }
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            let host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { return nil }
            guard let port = after.isEmpty ? 4_222 : Int(after.dropFirst()) else { return nil }
            return (host, port)
        }
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard let host = parts.first, !host.isEmpty, parts.count <= 2 else { return nil }
        guard let port = parts.count == 2 ? Int(parts[1]) : 4_222, (1...65_535).contains(port) else { return nil }
        return (String(host), port)
    }
}
