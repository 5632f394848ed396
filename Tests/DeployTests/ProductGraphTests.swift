import Foundation
import Testing
import TestSlots

/// The production binary carries no test tooling: `touchline` reaches the mock APNs it starts in
/// development mode (and the arrival histograms the mock keeps), never `LoadKit`'s report writers,
/// process samplers and match-day schedules. Read from the package's own description, so a new
/// dependency edge anywhere in the graph is caught, and from the linked binary's symbols.
@Suite(.heavy) struct ProductGraphTests {
    /// The package as `swift package describe` sees it: module name → its target and product
    /// dependencies, and the names of the library products.
    static func describePackage() async throws -> (graph: [String: [String]], libraries: Set<String>) {
        // A scratch path of its own: the test runs while `swift test` holds the package's `.build`.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-describe-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (status, output) = try await DeployTool.run("swift", ["package", "--scratch-path", scratch, "describe", "--type", "json"])
        try #require(status == 0, "swift package describe failed: \(output)")
        let start = try #require(output.firstIndex(of: "{"), "no JSON in: \(output)")
        let document = try JSONSerialization.jsonObject(with: Data(output[start...].utf8)) as? [String: Any]
        let targets = try #require(document?["targets"] as? [[String: Any]])
        var graph: [String: [String]] = [:]
        for target in targets {
            guard let name = target["name"] as? String else { continue }
            graph[name] = (target["target_dependencies"] as? [String] ?? []) + (target["product_dependencies"] as? [String] ?? [])
        }
        let products = try #require(document?["products"] as? [[String: Any]])
        let libraries = products.filter { ($0["type"] as? [String: Any])?["library"] != nil }.compactMap { $0["name"] as? String }
        return (graph, Set(libraries))
    }

    /// Every module `root` depends on, directly or not.
    static func closure(of root: String, in graph: [String: [String]]) -> Set<String> {
        var seen: Set<String> = []
        var pending = graph[root] ?? []
        while let next = pending.popLast() {
            guard seen.insert(next).inserted else { continue }
            pending += graph[next] ?? []
        }
        return seen
    }

    @Test func theGatewayExecutableDoesNotDependOnLoadKit() async throws {
        let graph = try await Self.describePackage().graph
        let gateway = Self.closure(of: "touchline", in: graph)
        #expect(gateway.contains("Touchline") && gateway.contains("APNsMock"), "\(gateway.sorted())")
        #expect(!gateway.contains("LoadKit"), "touchline reaches LoadKit: \(gateway.sorted())")
        #expect(!gateway.contains("touchline-load"))
        // The same walk finds LoadKit where it belongs, so the check above can fail.
        #expect(Self.closure(of: "touchline-load", in: graph).contains("LoadKit"))
        // The mock is usable on its own, without the load tools.
        #expect(!Self.closure(of: "APNsMock", in: graph).contains("LoadKit"))
    }

    /// The in-memory stores and APNs dispatch and the heavy tests' slots are for tests only, and
    /// the child processes and the loopback NATS cluster for the tests and the load tool: none is
    /// linked into the gateway, and none is a product.
    @Test(arguments: [("TouchlineTesting", "StoreContractTests", ["touchline-load"]), ("ChildProcesses", "TouchlineTests", []),
                      ("TestSlots", "TouchlineTests", ["touchline-load"]), ("NATSServers", "TouchlineJetStreamTests", []),
                      ("ClusterSimulations", "TouchlineJetStreamTests", ["touchline-load"])])
    func theTestSupportModulesAreLinkedByTestsOnly(module: String, aTestTargetUsingIt: String, alsoKeptFrom: [String]) async throws {
        let (graph, libraries) = try await Self.describePackage()
        #expect(graph[module] != nil, "the module is gone or renamed: \(graph.keys.sorted())")
        for executable in ["touchline", "touchline-mock-apns", "touchline-fuzz"] + alsoKeptFrom {
            #expect(!Self.closure(of: executable, in: graph).contains(module), "\(executable) reaches \(module)")
        }
        #expect(!libraries.contains(module))
        // The same walk finds it from a test target, so the checks above can fail.
        #expect(Self.closure(of: aTestTargetUsingIt, in: graph).contains(module))
    }

    /// The gateway's own modules in layers, lowest first: a module may depend on the foundations
    /// and on gateway modules of lower layers only, so the graph has no cycle and no feature reaches
    /// up into the assembly. A new gateway module must be placed here.
    static let gatewayLayers: [[String]] = [
        ["TouchlineConfiguration"],
        ["TouchlineAccess"],
        ["TouchlineWebhooks"],
        ["TouchlinePersonal"],
        ["TouchlineChannels"],
        ["TouchlineCluster", "TouchlineOperators"],
        ["Touchline"],
    ]
    /// What the gateway is built on (the core, the runtime, stores, protocols, clients).
    static let foundations: Set<String> = [
        "TouchlineActivity", "TouchlineCore", "TouchlineRuntime", "TouchlineStore", "TouchlineJetStream", "NATS", "HTTP2", "APNs", "APNsMock",
        "Measurements", "CommandLineOptions", "CShims", "CNGHTTP2", "COpenSSL", "CLibevent", "CSQLite", "CNATS",
    ]

    @Test func theGatewaysModulesDependOnLowerLayersOnly() async throws {
        let graph = try await Self.describePackage().graph
        let layer = Dictionary(uniqueKeysWithValues: Self.gatewayLayers.enumerated().flatMap { index, modules in modules.map { ($0, index) } })
        for module in Self.closure(of: "Touchline", in: graph).union(["Touchline"]) where !Self.foundations.contains(module) {
            let own = try #require(layer[module], "\(module) is a gateway module without a layer: place it in gatewayLayers")
            for dependency in graph[module] ?? [] where !Self.foundations.contains(dependency) {
                let theirs = try #require(layer[dependency], "\(module) depends on \(dependency), which has no layer")
                #expect(theirs < own, "\(module) (layer \(own)) depends on \(dependency) (layer \(theirs))")
            }
        }
        // The walk sees the gateway's modules, so the checks above can fail.
        #expect(Self.closure(of: "Touchline", in: graph).isSuperset(of: Self.gatewayLayers.dropLast().flatMap { $0 }))
    }

    @Test func theReusablePartsAreLibraryProducts() async throws {
        let libraries = try await Self.describePackage().libraries
        #expect(libraries.isSuperset(of: ["TouchlineCore", "APNs", "APNsMock"]), "library products: \(libraries.sorted())")
    }

    @Test func theLinkedGatewayHoldsNoLoadKitOrTestSupportSymbols() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: DeployTool.touchline), "build the touchline executable first")
        guard DeployTool.exists("nm") else { return }
        let (status, symbols) = try await DeployTool.run("nm", [DeployTool.touchline])
        try #require(status == 0, "nm failed: \(symbols.prefix(200))")
        // Swift mangles a module name into each symbol as its length and name: `7LoadKit`.
        #expect(symbols.contains("8APNsMock"), "nm output does not look like the gateway's symbols")
        #expect(!symbols.contains("7LoadKit"), "the touchline binary links LoadKit code")
        #expect(!symbols.contains("16TouchlineTesting"), "the touchline binary links the in-memory test doubles")
        #expect(!symbols.contains("14ChildProcesses"), "the touchline binary links the tests' process starter")
        #expect(!symbols.contains("11NATSServers"), "the touchline binary links the loopback NATS cluster")
        #expect(!symbols.contains("18ClusterSimulations"), "the touchline binary links the tests' simulations")
    }
}
