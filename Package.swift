// swift-tools-version:6.0
import PackageDescription

/// Touchline: a push gateway for live sports on APNs broadcast channels.
///
/// Layout (see docs/architecture.md):
/// - C system libraries and a tiny shim for macros Swift cannot import;
/// - `TouchlineCore`: pure domain logic, no I/O;
/// - `TouchlineRuntime`: the shell around libevent and OpenSSL (event loops, TLS streams);
/// - `TouchlineStore`: channels and the event log behind small protocols, on SQLite with group commit;
/// - `HTTP2`: nghttp2 client and server sessions on top of the runtime;
/// - `APNs`: provider tokens, typed APNs requests and errors, connection pools;
/// - `touchline`: the command-line entry point;
/// - `LoadTests/`: the strict mock APNs server, the load generator and `LoadKit`, its pure parts
///   (histograms, process sampling, match-day schedules, reports).
let package = Package(
    name: "Touchline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "touchline", targets: ["touchline"]),
        .executable(name: "touchline-mock-apns", targets: ["touchline-mock-apns"]),
        .executable(name: "touchline-load", targets: ["touchline-load"]),
    ],
    targets: [
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLibevent", pkgConfig: "libevent_core", providers: [.apt(["libevent-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .target(name: "CShims", dependencies: ["COpenSSL", "CLibevent"]),

        .target(name: "TouchlineCore"),
        .target(name: "TouchlineRuntime", dependencies: ["TouchlineCore", "CShims", "CLibevent", "COpenSSL", "CSQLite"]),
        .target(name: "TouchlineStore", dependencies: ["TouchlineCore", "TouchlineRuntime", "CSQLite"]),
        .target(name: "HTTP2", dependencies: ["TouchlineCore", "TouchlineRuntime", "CNGHTTP2", "CShims"]),
        .target(name: "APNs", dependencies: ["TouchlineCore", "TouchlineRuntime", "HTTP2", "CShims", "COpenSSL"]),
        .target(name: "Touchline", dependencies: ["TouchlineCore", "TouchlineRuntime", "TouchlineStore", "HTTP2", "APNs", "MockAPNs"]),
        .executableTarget(name: "touchline", dependencies: ["Touchline", "APNs", "MockAPNs", "TouchlineRuntime"]),

        .target(name: "LoadKit", dependencies: ["TouchlineCore"], path: "LoadTests/LoadKit"),
        .target(name: "MockAPNs", dependencies: ["LoadKit", "TouchlineCore", "TouchlineRuntime", "HTTP2", "CShims", "COpenSSL"],
                path: "LoadTests/MockAPNs"),
        .executableTarget(name: "touchline-mock-apns", dependencies: ["MockAPNs"], path: "LoadTests/MockAPNsServer"),
        .executableTarget(name: "touchline-load", dependencies: ["APNs", "LoadKit", "MockAPNs", "Touchline", "TouchlineRuntime"],
                          path: "LoadTests/Loadgen"),
        // libFuzzer targets (`make fuzz`); the ordinary build replays their stored inputs.
        .executableTarget(name: "touchline-fuzz", dependencies: ["TouchlineCore", "TouchlineRuntime", "Touchline"], path: "Fuzz",
                          exclude: ["Corpus"]),

        .testTarget(name: "TouchlineCoreTests", dependencies: ["TouchlineCore"]),
        .testTarget(name: "TouchlineRuntimeTests", dependencies: ["TouchlineRuntime", "TouchlineCore"]),
        .testTarget(name: "TouchlineStoreTests", dependencies: ["TouchlineStore", "TouchlineRuntime", "TouchlineCore"]),
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2", "TouchlineRuntime", "TouchlineCore", "CNGHTTP2"]),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "TouchlineCore", "COpenSSL", "CShims"]),
        .testTarget(name: "MockAPNsTests", dependencies: ["MockAPNs", "HTTP2", "TouchlineRuntime", "TouchlineCore"]),
        .testTarget(name: "TouchlineHTTPTests", dependencies: ["TouchlineRuntime", "TouchlineCore"]),
        .testTarget(name: "DeployTests"),
        .testTarget(name: "LoadKitTests", dependencies: ["LoadKit"]),
        .testTarget(name: "LoadScenarioTests", dependencies: ["LoadKit"]),
        .testTarget(name: "FuzzCorpusTests"),
        .testTarget(name: "TouchlineTests", dependencies: ["Touchline", "TouchlineStore", "APNs", "HTTP2", "MockAPNs", "TouchlineRuntime", "TouchlineCore"]),
    ],
    swiftLanguageModes: [.v6]
)
