import ChildProcesses
import Foundation
import Synchronization

/// A real NATS JetStream cluster on loopback for tests and the load tool's `scale-out` scenario:
/// `nats-server` processes on free ports, each with its data in a temporary directory, started
/// and stopped by their PIDs. A node can be killed (`SIGKILL`, as a machine loss) and started
/// again on the same ports and data.
public final class NATSCluster: Sendable {
    /// One server of the cluster.
    public struct Node: Sendable {
        public let name: String
        public let clientPort: Int
        public let routePort: Int
        public let monitorPort: Int
        public let configurationFile: String
        public var url: String { "nats://127.0.0.1:\(clientPort)" }
    }

    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
        /// A node could not bind a port chosen as free: another process took it in between.
        var portTaken = false
    }

    /// Starts tried when a chosen port is taken before a node binds it.
    static let portAttempts = 3

    public let directory: String
    public let nodes: [Node]
    private let processes: Mutex<[ChildProcess?]>

    /// Client URLs of every node, for a client's server list.
    public var urls: [String] { nodes.map(\.url) }

    /// The running nodes' names and process ids (for CPU and memory readings).
    public var runningProcesses: [(name: String, pid: Int32)] {
        processes.withLock { processes in
            zip(nodes, processes).compactMap { node, process in process.map { (node.name, $0.pid) } }
        }
    }

    /// Starts `size` nodes forming one cluster (a single node runs without a cluster block), with
    /// `mappings` (subject mappings, e.g. partitioning) on every node, and waits until every node
    /// reports JetStream healthy.
    /// A node that cannot bind a port chosen as free (another process took it in between) is
    /// seen in its log at once, and the whole cluster starts again on new ports.
    public static func start(size: Int = 3, mappings: [String: String] = [:]) async throws -> NATSCluster {
        try await start(size: size, mappings: mappings, choosingPorts: uniqueFreePorts)
    }

    /// ``start(size:mappings:)`` with the ports of each attempt chosen by `choosingPorts` (three
    /// per node: a test hands out a taken one first).
    static func start(size: Int, mappings: [String: String], choosingPorts: (Int) -> [Int]) async throws -> NATSCluster {
        for attempt in 1... {
            do {
                return try await startOnce(size: size, mappings: mappings, ports: choosingPorts(3 * size))
            } catch let failure as StartFailure where failure.portTaken && attempt < portAttempts {
                continue
            }
        }
        preconditionFailure("the attempts end by returning or throwing")
    }

    private static func startOnce(size: Int, mappings: [String: String], ports: [Int]) async throws -> NATSCluster {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("touchline-nats-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let nodes = (0..<size).map { index in
            Node(name: "n\(index + 1)", clientPort: ports[3 * index], routePort: ports[3 * index + 1],
                 monitorPort: ports[3 * index + 2], configurationFile: "\(directory)/n\(index + 1).conf")
        }
        for node in nodes {
            try configuration(of: node, in: directory, routes: size > 1 ? nodes.map(\.routePort) : [], mappings: mappings)
                .write(toFile: node.configurationFile, atomically: true, encoding: .utf8)
        }
        let cluster = NATSCluster(directory: directory, nodes: nodes)
        for index in nodes.indices { try cluster.startNode(index) }
        // A fresh cluster elects its JetStream meta leader; beside a parallel suite that has
        // taken up to half a minute.
        do {
            try await cluster.waitUntilHealthy(timeout: .seconds(60))
        } catch {
            await cluster.stop()
            throw error
        }
        return cluster
    }

    private init(directory: String, nodes: [Node]) {
        self.directory = directory
        self.nodes = nodes
        processes = Mutex(Array(repeating: nil, count: nodes.count))
    }

    deinit {
        let running = processes.withLock { $0 }
        for process in running.compactMap({ $0 }) {
            process.signal(SIGKILL)
            process.wait()
            ServerReaper.release(process.pid)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Kills node `index` at once, as a lost machine (no goodbye to its peers or clients).
    public func kill(_ index: Int) async {
        guard let process = processes.withLock({ processes in defer { processes[index] = nil }; return processes[index] }) else { return }
        process.signal(SIGKILL)
        await process.ended()
        ServerReaper.release(process.pid)
    }

    /// Starts node `index` again on its ports and data; returns once it serves with JetStream
    /// enabled. Its streams and consumers catch up afterwards (the bare `/healthz`, which waits
    /// for every one of them, was seen failing for minutes on a consumer created while the node
    /// was down, with nats-server 2.9).
    public func restart(_ index: Int) async throws {
        try startNode(index)
        try await waitUntilHealthy(nodes: [index], assets: false)
    }

    /// Stops every node gracefully and waits for them.
    public func stop() async {
        let running = processes.withLock { processes in defer { processes = processes.map { _ in nil } }; return processes }
        for process in running.compactMap({ $0 }) { process.signal(SIGTERM) }
        for process in running.compactMap({ $0 }) {
            await process.ended()
            ServerReaper.release(process.pid)
        }
    }

    /// The last lines of node `index`'s log, for a failure message.
    public func logTail(_ index: Int, lines: Int = 20) -> String {
        let log = (try? String(contentsOfFile: "\(directory)/\(nodes[index].name).log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    private func startNode(_ index: Int) throws {
        let node = nodes[index]
        let process = try ChildProcess(try NATSServerExecutable.current.get(), ["-c", node.configurationFile], output: .null, errors: .null)
        ServerReaper.adopt(process.pid, configurationFile: node.configurationFile)
        processes.withLock { $0[index] = process }
    }

    /// Polls each node's `/healthz` until it answers ok and, in a cluster, its `/jsz` until it
    /// names the JetStream meta leader (before that, creating a stream times out).
    private func waitUntilHealthy(nodes indices: [Int]? = nil, assets: Bool = true, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        for index in indices ?? Array(nodes.indices) {
            while !(await Self.healthy(port: nodes[index].monitorPort, clustered: nodes.count > 1, assets: assets)) {
                if logTail(index).contains("address already in use") {
                    throw StartFailure(description: "NATS node \(nodes[index].name) found a port taken:\n\(logTail(index))", portTaken: true)
                }
                guard ContinuousClock.now < deadline else {
                    throw StartFailure(description: "NATS node \(nodes[index].name) not healthy within \(timeout):\n\(logTail(index))")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    private static func healthy(port: Int, clustered: Bool, assets: Bool) async -> Bool {
        let query = assets ? "" : "?js-enabled=true"
        guard let health = try? await ChildProcess.run("/usr/bin/curl", ["-s", "-m", "2", "http://127.0.0.1:\(port)/healthz\(query)"]),
              health.output.contains("\"ok\"") else { return false }
        guard clustered else { return true }
        guard let jetStream = try? await ChildProcess.run("/usr/bin/curl", ["-s", "-m", "2", "http://127.0.0.1:\(port)/jsz"]) else {
            return false
        }
        return jetStream.output.contains("\"leader\"")
    }

    private static func configuration(of node: Node, in directory: String, routes: [Int], mappings: [String: String]) -> String {
        var lines = [
            "server_name: \(node.name)",
            "listen: 127.0.0.1:\(node.clientPort)",
            "http: 127.0.0.1:\(node.monitorPort)",
            "log_file: \"\(directory)/\(node.name).log\"",
            "jetstream { store_dir: \"\(directory)/\(node.name)\" }",
        ]
        if !routes.isEmpty {
            let urls = routes.map { "\"nats://127.0.0.1:\($0)\"" }.joined(separator: ", ")
            // Clients use the servers they were given, no others the cluster tells them of: a test
            // that puts a relay between a client and the servers keeps it there.
            lines.append("cluster { name: touchline, listen: 127.0.0.1:\(node.routePort), routes: [\(urls)], no_advertise: true }")
        }
        if !mappings.isEmpty {
            let entries = mappings.sorted { $0.key < $1.key }.map { "  \"\($0.key)\": \"\($0.value)\"" }
            lines.append("mappings {\n\(entries.joined(separator: "\n"))\n}")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `count` distinct TCP ports on 127.0.0.1 that were free a moment ago (all held open while
    /// choosing, so none is chosen twice), below the kernel's range for outgoing connections'
    /// local ports (``ephemeralPorts``): a node killed and started again binds its old ports, and
    /// while it is down any connection made on the machine could otherwise take one of them as
    /// its local port (a CI run's restarted node once found its monitoring port so taken).
    static func uniqueFreePorts(_ count: Int) -> [Int] {
        let below = ephemeralPorts.lowerBound
        let candidates = below > 11_024 ? Array(10_000..<below).shuffled() : []
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        var chosen: [Int] = []
        for candidate in candidates where chosen.count < count {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if bindLoopback(descriptor, port: candidate) != nil {
                descriptors.append(descriptor)
                chosen.append(candidate)
            } else {
                close(descriptor)
            }
        }
        // A kernel whose outgoing range leaves no room below it: ports it chooses, as before.
        while chosen.count < count {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            descriptors.append(descriptor)
            chosen.append(bindLoopback(descriptor, port: 0) ?? 0)
        }
        return chosen
    }

    /// The local ports the kernel gives outgoing connections (`ip_local_port_range`).
    static var ephemeralPorts: ClosedRange<Int> {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard bounds.count == 2, bounds[0] <= bounds[1] else { return 32_768...60_999 }
        return bounds[0]...bounds[1]
    }

    /// Binds `descriptor` to 127.0.0.1:`port` (0: one the kernel chooses); the bound port, or nil
    /// when it is taken.
    private static func bindLoopback(_ descriptor: Int32, port: Int) -> Int? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }
}
