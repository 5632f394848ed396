// swift-tools-version:6.0
import PackageDescription

/// Touchline: a push gateway for live sports on APNs broadcast channels.
///
/// Layout (see docs/architecture.md):
/// - C system libraries and a tiny shim for macros Swift cannot import;
/// - `TouchlineActivity`: what the app compiles (each sport's attributes and content-state, the
///   alert keys and their string catalogue), platform-neutral;
/// - `TouchlineCore`: pure domain logic, no I/O;
/// - `TouchlineRuntime`: the shell around libevent and OpenSSL (event loops, TLS streams);
/// - `TouchlineStore`: channels and the event log behind small protocols, on SQLite with group commit;
/// - `NATS`: the NATS C client for the loops (JetStream publishes, ordered consumers, streams);
/// - `HTTP2`: nghttp2 client and server sessions on top of the runtime;
/// - `APNs`: provider tokens, typed APNs requests and errors, connection pools;
/// - the gateway's own modules, in layers: `TouchlineConfiguration` (its settings),
///   `TouchlineAccess` (the provider API's door), `TouchlineWebhooks`, `TouchlinePersonal`
///   (tokens and the personal queue), `TouchlineChannels` (the channel service and the backend
///   seam), `TouchlineCluster` and `TouchlineOperators` (beside each other), and `Touchline` (the
///   assembly), each on the ones before it (`ProductGraphTests`);
/// - `TouchlineTesting`: in-memory stores and APNs dispatch for tests, held to the contract tests
///   that SQLite passes (`StoreContractTests`); `ClusterSimulations`: the lease machines of a
///   cluster in virtual time, for the tests' simulations; `ChildProcesses`: the programs the tests
///   and the load tool run beside themselves, started with `posix_spawn`;
/// - `APNsMock`: the strict mock APNs server (a test server as a product of its own), which the
///   gateway starts in development mode; `Measurements`: the arrival histograms it shares with
///   the load tools;
/// - `touchline`, `touchline-mock-apns`: the command-line entry points, on `CommandLineOptions`
///   (options declared once, usage generated from them, one-line errors with exit status 64);
/// - `LoadTests/`: the load generator and `LoadKit`, its pure parts (process sampling, match-day
///   schedules, reports), which the production binary never links (`ProductGraphTests`).
let package = Package(
    name: "Touchline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "touchline", targets: ["touchline"]),
        .executable(name: "touchline-mock-apns", targets: ["touchline-mock-apns"]),
        .executable(name: "touchline-load", targets: ["touchline-load"]),
        // The reusable parts, for other Swift projects: the pure core (engine, policies, payloads),
        // the APNs client with its HTTP/2 transport, and the strict mock APNs to test against.
        .library(name: "TouchlineCore", targets: ["TouchlineCore"]),
        .library(name: "TouchlineActivity", targets: ["TouchlineActivity"]),
        .library(name: "APNs", targets: ["APNs"]),
        .library(name: "APNsMock", targets: ["APNsMock"]),
    ],
    targets: [
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLibevent", pkgConfig: "libevent_core", providers: [.apt(["libevent-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CNATS", pkgConfig: "libnats", providers: [.apt(["libnats-dev"])]),
        .target(name: "CShims", dependencies: ["COpenSSL", "CLibevent"]),

        // What the app team compiles: the alert keys (and their string catalogue, which goes into
        // the app target, not this module); platform-neutral, no dependencies.
        .target(name: "TouchlineActivity", exclude: ["Localizable.xcstrings"]),
        .target(name: "TouchlineCore", dependencies: ["TouchlineActivity"]),
        // The command-line layer of the three executables: options declared once, parsed, and
        // turned into usage text and one-line errors (pure, no dependencies).
        .target(name: "CommandLineOptions"),
        .target(name: "TouchlineRuntime", dependencies: ["TouchlineCore", "CShims", "CLibevent", "COpenSSL", "CSQLite"]),
        .target(name: "TouchlineStore", dependencies: ["TouchlineCore", "TouchlineRuntime", "CSQLite"]),
        // The NATS C client wrapped for the loops: connections, JetStream publishes that complete
        // when the cluster has stored them, ordered consumers, streams (docs/cluster.md).
        .target(name: "NATS", dependencies: ["CNATS", "TouchlineRuntime"]),
        // The JetStream backend: the stores behind the gateway's seams, on a NATS cluster.
        .target(name: "TouchlineJetStream", dependencies: ["NATS", "TouchlineCore", "TouchlineRuntime", "TouchlineStore"]),
        .target(name: "HTTP2", dependencies: ["TouchlineCore", "TouchlineRuntime", "CNGHTTP2", "CShims"]),
        .target(name: "APNs", dependencies: ["TouchlineCore", "TouchlineRuntime", "HTTP2", "CShims", "COpenSSL"]),
        // The gateway's settings: every feature's settings type, the configuration file and its
        // layers (file, environment, flags), validation and the report of what is in force.
        .target(name: "TouchlineConfiguration", dependencies: ["APNs", "CommandLineOptions", "NATS", "TouchlineCore", "TouchlineRuntime"]),
        // The provider API's door: API keys and their scopes, the router's table of features,
        // admission from a request's head, per-key rate limits and quotas, body decoding.
        .target(name: "TouchlineAccess", dependencies: ["TouchlineConfiguration", "TouchlineCore", "TouchlineRuntime", "TouchlineStore"]),
        // Webhooks: the outbox facts are written to, delivery to the receivers with retries, and
        // the events API that reads the outbox.
        .target(name: "TouchlineWebhooks", dependencies: ["TouchlineAccess", "TouchlineConfiguration", "TouchlineCore", "TouchlineRuntime", "TouchlineStore"]),
        // Personal pushes: the token registry's API, the personal queue (jobs, their intake and
        // board, the dispatcher on its own loop and pools), dead letters, and each app's APNs
        // dispatch and figures.
        .target(name: "TouchlinePersonal", dependencies: ["APNs", "HTTP2", "TouchlineAccess", "TouchlineConfiguration", "TouchlineCore", "TouchlineRuntime",
                                                         "TouchlineStore", "TouchlineWebhooks"]),
        // A channel's service: the shell that performs its machine's actions (stores, APNs,
        // timers), the broadcast dispatcher, recordings, exports and replays, the live feed.
        .target(name: "TouchlineChannels", dependencies: ["TouchlineAccess", "TouchlinePersonal", "TouchlineWebhooks", "TouchlineConfiguration", "TouchlineCore",
                                                         "TouchlineRuntime", "TouchlineStore", "HTTP2", "APNs", "Measurements"]),
        // The JetStream cluster as a backend: partition logs, leases, the shared registry and
        // job board, owner-or-forward, direct ingest from the NATS subject.
        .target(name: "TouchlineCluster", dependencies: ["TouchlineChannels", "TouchlineAccess", "TouchlinePersonal", "TouchlineWebhooks", "TouchlineConfiguration",
                                                        "TouchlineCore", "TouchlineRuntime", "TouchlineStore", "TouchlineJetStream", "NATS"]),
        // What operators see and do: readiness, /metrics, stats, the dashboard and its live feed,
        // the APNs key's reload. The dashboard's page, script and style are real files, compiled
        // into the binary as bytes (`PackageResources`), so the gateway stays one file to deploy.
        .target(name: "TouchlineOperators", dependencies: ["TouchlineChannels", "TouchlineAccess", "TouchlinePersonal", "TouchlineConfiguration", "TouchlineCore",
                                                          "TouchlineRuntime", "TouchlineStore", "APNs"],
                resources: [.embedInCode("Dashboard/dashboard.html"), .embedInCode("Dashboard/dashboard.js"),
                            .embedInCode("Dashboard/dashboard.css")]),
        .target(name: "Touchline", dependencies: ["TouchlineChannels", "TouchlineCluster", "TouchlineOperators", "TouchlineAccess", "TouchlinePersonal", "TouchlineWebhooks",
                                                 "TouchlineConfiguration", "TouchlineCore", "TouchlineRuntime", "TouchlineStore", "APNs", "APNsMock"]),
        .executableTarget(name: "touchline", dependencies: ["CommandLineOptions", "Touchline", "TouchlineChannels", "TouchlineCluster", "APNs", "APNsMock", "TouchlineRuntime"]),
        // In-memory stores and APNs dispatch for tests, held to the same contract tests as SQLite
        // (`StoreContractTests`), and the in-memory NATS JetStream cluster, held to the same
        // contract tests as nats-server (`JetStreamContractTests`); never linked into an
        // executable (`ProductGraphTests`).
        .target(name: "TouchlineTesting", dependencies: ["ChildProcesses", "NATS", "NATSServers", "TestSlots", "Touchline", "TouchlineChannels", "TouchlinePersonal", "TouchlineStore", "TouchlineCore", "TouchlineRuntime", "APNs",
                                                        "HTTP2"]),
        // The programs the tests and the load tool start (posix_spawn: Foundation's `Process` can
        // crash a busy process on Linux, see `ChildProcess`); never linked into the gateway.
        .target(name: "CSpawn"),
        .target(name: "ChildProcesses", dependencies: ["CSpawn"]),
        // A real NATS JetStream cluster on loopback (nats-server processes), for the tests and the
        // load tool's scale-out scenario; never linked into the gateway (`ProductGraphTests`).
        .target(name: "NATSServers", dependencies: ["ChildProcesses", "NATS", "TouchlineRuntime"]),
        .target(name: "Measurements"),
        // Deterministic simulations in virtual time of gateways around the lease bucket (the pure
        // lease machines played as a shell and a network would play them), for the tests only.
        .target(name: "ClusterSimulations", dependencies: ["TouchlineCore"]),
        // The `.heavy` trait: tests that occupy the machine (gateways, servers, clusters, child
        // processes) share a few slots, so a parallel run never starts them all at once; and the
        // helpers every test target shares (`eventually`, `LoopbackSocket`).
        .target(name: "TestSlots"),
        .target(name: "APNsMock", dependencies: ["CommandLineOptions", "Measurements", "TouchlineCore", "TouchlineRuntime", "HTTP2", "CShims", "COpenSSL"]),
        .executableTarget(name: "touchline-mock-apns", dependencies: ["APNsMock", "CommandLineOptions"]),

        .target(name: "LoadKit", dependencies: ["Measurements", "TouchlineCore"], path: "LoadTests/LoadKit"),
        .executableTarget(name: "touchline-load", dependencies: ["APNs", "APNsMock", "ChildProcesses", "CommandLineOptions", "LoadKit", "Measurements",
                                                             "NATS", "NATSServers", "Touchline", "TouchlineCore", "TouchlineJetStream", "TouchlineRuntime",
                                                             "TouchlineStore"],
                          path: "LoadTests/Loadgen"),
        // libFuzzer targets (`make fuzz`); the ordinary build replays their stored inputs.
        .executableTarget(name: "touchline-fuzz", dependencies: ["TouchlineCore", "TouchlineRuntime", "Touchline"], path: "Fuzz",
                          exclude: ["Corpus"]),

        .testTarget(name: "CommandLineOptionsTests", dependencies: ["CommandLineOptions"]),
        .testTarget(name: "ChildProcessesTests", dependencies: ["TestSlots", "ChildProcesses"]),
        .testTarget(name: "NATSTests", dependencies: ["TestSlots", "NATS", "NATSServers", "TouchlineCore", "TouchlineRuntime", "TouchlineTesting"]),
        .testTarget(name: "TouchlineJetStreamTests", dependencies: ["ClusterSimulations", "TestSlots", "NATS", "NATSServers", "TouchlineCore", "TouchlineJetStream", "TouchlineRuntime",
                                                                    "TouchlineStore", "TouchlineTesting"]),
        .testTarget(name: "TouchlineCoreTests", dependencies: ["ClusterSimulations", "TouchlineCore"]),
        .testTarget(name: "TouchlineActivityTests", dependencies: ["TouchlineActivity", "TouchlineCore"]),
        .testTarget(name: "TouchlineRuntimeTests", dependencies: ["TestSlots", "TouchlineRuntime", "TouchlineCore", "ChildProcesses"]),
        .testTarget(name: "TouchlineStoreTests", dependencies: ["TestSlots", "TouchlineStore", "TouchlineRuntime", "TouchlineCore", "ChildProcesses"]),
        // One contract suite per store and dispatch protocol, run against every implementation.
        .testTarget(name: "StoreContractTests", dependencies: ["TestSlots", "TouchlineTesting", "Touchline", "TouchlineStore", "TouchlineRuntime",
                                                               "TouchlineCore", "APNs", "APNsMock", "NATS", "NATSServers", "TouchlineJetStream", "TouchlinePersonal"]),
        .testTarget(name: "HTTP2Tests", dependencies: ["TestSlots", "HTTP2", "TouchlineRuntime", "TouchlineCore", "CNGHTTP2", "ChildProcesses"]),
        .testTarget(name: "APNsTests", dependencies: ["TestSlots", "APNs", "TouchlineCore", "COpenSSL", "CShims", "ChildProcesses"]),
        .testTarget(name: "APNsMockTests", dependencies: ["TestSlots", "APNsMock", "Measurements", "HTTP2", "CNGHTTP2", "TouchlineRuntime", "TouchlineCore", "ChildProcesses"]),
        .testTarget(name: "DeployTests", dependencies: ["TestSlots", "ChildProcesses"]),
        .testTarget(name: "MeasurementsTests", dependencies: ["Measurements"]),
        .testTarget(name: "LoadKitTests", dependencies: ["LoadKit", "Measurements"]),
        .testTarget(name: "LoadScenarioTests", dependencies: ["TestSlots", "LoadKit", "Measurements", "ChildProcesses", "NATSServers"]),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["TestSlots", "ChildProcesses"]),
        .testTarget(name: "TouchlineTests", dependencies: ["TestSlots", "Touchline", "TouchlineAccess", "TouchlineConfiguration", "TouchlineTesting", "NATSServers", "TouchlineJetStream", "TouchlineStore", "APNs", "HTTP2", "APNsMock", "TouchlineRuntime", "TouchlineCore", "ChildProcesses", "TouchlinePersonal", "TouchlineChannels", "TouchlineCluster", "TouchlineOperators"]),
    ],
    swiftLanguageModes: [.v6]
)
