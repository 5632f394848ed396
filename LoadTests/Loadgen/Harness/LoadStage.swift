import APNs
import APNsMock
import Foundation
import LoadKit
import TouchlineCore

/// The processes of one scenario, started fresh for it: the mock APNs, the gateway
/// (`touchline serve`), and what both need (keys, certificates, a data directory). Stopped and
/// removed when released.
///
/// Scenarios whose mock does heavy work (a million device pushes, an h2load ceiling race) pin it
/// to CPUs of its own, so that it does not compete with the clients it measures; the others let
/// every process use every CPU, so the gateway has the whole machine.
final class LoadStage {
    let settings: LoadSettings
    /// Where this stage's processes, and this load generator, run.
    let placement: CPUPlacement
    let directory: String
    let key: MockAPNsProviderKeyFiles.Files
    let mock: MockProcess
    /// The gateway this stage started last with ``startGateway(extraArguments:)``.
    private(set) var gatewayProcess: GatewayProcess?
    /// Gateways started beside it (``startAnotherGateway(extraArguments:)``), in order.
    private(set) var otherGateways: [GatewayProcess] = []
    /// The admin key of every gateway of the stage (a cluster's gateways share their keys).
    let adminKey = GatewayProcess.randomAdminKey()
    /// Other processes of the scenario whose CPU and memory the report shows (NATS servers).
    var companionProcesses: [(name: String, pid: Int32)] = []

    /// Starts the mock with `mockThreads` loops (default: its CPUs' count), `--arrival-latency
    /// sentAt` and `mockArguments`, on CPUs of its own when `pinMock` (and the run allows pinning).
    init(settings: LoadSettings, pinMock: Bool, mockThreads: Int? = nil, mockArguments: [String] = []) throws {
        self.settings = settings
        placement = pinMock ? settings.placement : .shared(cpus: settings.placement.cpus)
        try pinThisProcess(to: placement.clients ?? "0-\(placement.cpus - 1)")
        directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        key = try MockAPNsProviderKeyFiles.generate(keyID: LoadIdentity.keyID, in: directory)
        mock = try MockProcess(directory: directory, key: key, threads: mockThreads ?? placement.mockCPUCount,
                               extraArguments: ["--arrival-latency", "sentAt"] + mockArguments, cpus: placement.mock)
    }

    deinit {
        stopGateways()
        mock.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the gateway the scenario drives: `touchline serve` (or `--gateway-binary`) on this
    /// stage's mock, with the user's `--gateway-config` if given, plus `extraArguments`; on an
    /// emptied data directory when `emptyData` (a scenario's next configuration, once the
    /// gateway before is stopped).
    func startGateway(extraArguments: [String] = [], emptyData: Bool = false) throws -> GatewayTarget {
        if emptyData { try? FileManager.default.removeItem(atPath: dataDirectory(ofGateway: 0)) }
        let (gateway, target) = try launchGateway(extraArguments: extraArguments, dataDirectory: dataDirectory(ofGateway: 0))
        gatewayProcess = gateway
        return target
    }

    /// Starts one more gateway beside the first, with a data directory of its own (a cluster's
    /// gateways share their channels through the cluster, not through files).
    func startAnotherGateway(extraArguments: [String]) throws -> GatewayTarget {
        let (gateway, target) = try launchGateway(extraArguments: extraArguments, dataDirectory: dataDirectory(ofGateway: otherGateways.count + 1))
        otherGateways.append(gateway)
        return target
    }

    /// Stops every gateway of the stage together: SIGTERM to all of them, then waits for each. A
    /// cluster's gateways must stop before its servers do: once the servers are gone, each one's
    /// shutdown waits out its grace for answers the cluster can no longer give.
    func stopGateways() {
        let gateways = (gatewayProcess.map { [$0] } ?? []) + otherGateways
        gateways.forEach { $0.askToStop() }
        gateways.forEach { $0.stop() }
    }

    /// Kills gateway `index` of ``otherGateways`` with SIGKILL (no shutdown, as a lost machine).
    func killAnotherGateway(_ index: Int) { otherGateways[index].kill() }

    /// Stops gateway `index` of ``otherGateways`` with SIGSTOP (a process frozen by its host: it
    /// keeps its connections and wakes believing nothing happened).
    func pauseAnotherGateway(_ index: Int) { otherGateways[index].pause() }

    /// Resumes gateway `index` of ``otherGateways`` with SIGCONT.
    func resumeAnotherGateway(_ index: Int) { otherGateways[index].resume() }

    /// Starts gateway `index` of ``otherGateways`` again, on its data directory (emptied first
    /// when `emptyData`: a new machine in its place), with `extraArguments`.
    func restartAnotherGateway(_ index: Int, extraArguments: [String], emptyData: Bool = false) throws -> GatewayTarget {
        otherGateways[index].stop()
        if emptyData { try? FileManager.default.removeItem(atPath: dataDirectory(ofGateway: index + 1)) }
        let (gateway, target) = try launchGateway(extraArguments: extraArguments, dataDirectory: dataDirectory(ofGateway: index + 1))
        otherGateways[index] = gateway
        return target
    }

    /// The data directory of the stage's gateway `index`: 0 is ``startGateway(extraArguments:emptyData:)``'s,
    /// 1 and on those of ``otherGateways`` in order.
    func dataDirectory(ofGateway index: Int) -> String {
        index == 0 ? directory + "/data" : directory + "/data-\(index + 1)"
    }

    private func launchGateway(extraArguments: [String], dataDirectory: String) throws -> (GatewayProcess, GatewayTarget) {
        let gateway = try GatewayProcess(directory: directory, adminKey: adminKey, key: key, host: "127.0.0.1", pushPort: mock.pushPort,
                                         managementPort: mock.managementPort, caFile: mock.caFile,
                                         extraArguments: (settings.gatewayConfig.map { ["--config", $0] } ?? []) + extraArguments,
                                         cpus: placement.clients, executable: settings.gatewayBinary, dataDirectory: dataDirectory)
        return (gateway, GatewayTarget(host: "127.0.0.1", port: gateway.port, adminKey: adminKey))
    }

    /// The processes whose CPU and memory the report shows: the gateway (when it is ours), the
    /// mock and this load generator.
    var monitoredProcesses: [(name: String, pid: Int32)] {
        var processes: [(String, Int32)] = []
        if let gatewayProcess { processes.append(("gateway", gatewayProcess.pid)) }
        for (index, gateway) in otherGateways.enumerated() { processes.append(("gateway \(index + 2)", gateway.pid)) }
        processes.append(("mock APNs", mock.pid))
        processes += companionProcesses
        processes.append(("touchline-load", getpid()))
        return processes
    }

    // MARK: The h2load ceiling

    /// The body, headers and token paths h2load sends: what the gateway would send for them.
    struct DevicePushes {
        var tokens: [String]
        var payload: [UInt8]
        var priority: Int
    }

    /// h2load against this stage's mock: `pushes` once, over `connections` connections with
    /// `streams` streams each, at CPU priority `niceness`, on the clients' CPUs. Its rate is the
    /// physical ceiling every throughput of the scenario is compared with.
    func ceiling(_ pushes: DevicePushes, connections: Int, streams: Int, niceness: Int = 0) throws -> H2Load.Result {
        let uriFile = directory + "/uris-\(pushes.tokens.count).txt"
        let bodyFile = directory + "/body.json"
        if !FileManager.default.fileExists(atPath: uriFile) {
            try pushes.tokens.map { "https://127.0.0.1:\(mock.pushPort)/3/device/\($0)" }.joined(separator: "\n")
                .write(toFile: uriFile, atomically: true, encoding: .utf8)
        }
        try Data(pushes.payload).write(to: URL(fileURLWithPath: bodyFile))
        let signer = APNsConfiguration(keyPath: key.privateKeyFile, keyID: LoadIdentity.keyID, teamID: LoadIdentity.teamID,
                                       bundleID: LoadIdentity.bundleID,
                                       environment: .custom(pushHost: "127.0.0.1", pushPort: mock.pushPort,
                                                            managementHost: "127.0.0.1", managementPort: mock.managementPort))
        // The headers the gateway sends for a Live Activity push without expiration.
        let headers = [("authorization", try ProviderToken(configuration: signer, clock: SystemClock()).current()),
                       ("apns-push-type", "liveactivity"), ("apns-topic", LoadIdentity.bundleID + ".push-type.liveactivity"),
                       ("content-type", "application/json"), ("apns-priority", String(pushes.priority))]
        let result = try H2Load.run(requests: pushes.tokens.count, concurrency: streams, connections: connections, uriFile: uriFile,
                                    bodyFile: bodyFile, headers: headers, niceness: niceness, cpus: placement.clients)
        guard result.succeeded == pushes.tokens.count else {
            throw LoadError("h2load got \(result.succeeded) of \(pushes.tokens.count) 2xx answers")
        }
        return result
    }

    /// The standard ceiling of scenarios that are not about device pushes: 200,000 pushes of a
    /// 300-byte update over 2 connections of 500 streams.
    func standardCeiling() throws -> H2Load.Result {
        let tokens = (0..<200_000).map { String(format: "%064x", 0xC000_0000 + $0) }
        return try ceiling(DevicePushes(tokens: tokens, payload: LoadPayloads.update(bytes: 300), priority: 5), connections: 2, streams: 500)
    }
}

/// A provider API to drive: where, and the admin key it takes.
struct GatewayTarget: Sendable {
    var host: String
    var port: Int
    var adminKey: String

    /// A new keep-alive connection to it.
    func connect() throws -> HTTPLoadClient { try HTTPLoadClient(host: host, port: port, apiKey: adminKey) }

    /// `connect` as a value threads can share.
    var connector: @Sendable () throws -> HTTPLoadClient {
        let target = self
        return { try target.connect() }
    }

    /// What a cluster gateway's `/readyz` lists as served: its partition leases
    /// (`cluster.servedPartitions`), or its registry partitions (`cluster.registry.servedPartitions`).
    enum ServedPartitions {
        case leases, registry

        var path: [String] {
            switch self {
            case .leases: ["cluster", "servedPartitions"]
            case .registry: ["cluster", "registry", "servedPartitions"]
            }
        }
    }

    /// Its `/metrics` now.
    func metrics() throws -> PrometheusSnapshot {
        let response = try connect().send("GET", "/metrics")
        guard response.status == 200 else { throw LoadError("GET /metrics answered \(response.status): \(response.text.prefix(200))") }
        do { return try PrometheusSnapshot(parsing: response.text) } catch { throw LoadError("\(error)") }
    }

    /// The partitions it serves now, from its `/readyz`; none while it answers otherwise.
    func servedPartitions(_ kind: ServedPartitions) throws -> Set<Int> {
        let ready = try connect().send("GET", "/readyz")
        guard var value = try? JSONParser.parse(ready.body) else { return [] }
        for member in kind.path {
            guard let next = value[member: member] else { return [] }
            value = next
        }
        guard case .array(let served) = value else { return [] }
        return Set(served.compactMap { if case .integer(let number) = $0 { Int(number) } else { nil } })
    }
}
