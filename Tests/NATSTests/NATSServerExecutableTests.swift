import Testing
@testable import NATSServers

/// Which `nats-server` the test clusters and the load tool run: the setting's, else the first on
/// `PATH`, else Debian's; a setting naming nothing runnable is an error that says so.
@Suite struct NATSServerExecutableTests {
    static let installed: Set<String> = ["/opt/nats/bin/nats-server", "/usr/local/bin/nats-server", "/usr/sbin/nats-server"]

    static func find(_ environment: [String: String], installed: Set<String> = installed) -> Result<String, NATSServerExecutable.NotFound> {
        NATSServerExecutable.find(environment: environment, isExecutable: installed.contains)
    }

    @Test func theSettingWinsOverPATH() throws {
        let found = try Self.find(["TOUCHLINE_NATS_SERVER": "/opt/nats/bin/nats-server", "PATH": "/usr/local/bin:/usr/bin"]).get()
        #expect(found == "/opt/nats/bin/nats-server")
    }

    @Test func withoutTheSettingTheFirstOnPATHIsRun() throws {
        #expect(try Self.find(["PATH": "/usr/bin:/usr/local/bin:/usr/sbin"]).get() == "/usr/local/bin/nats-server")
        #expect(try Self.find(["PATH": "/usr/bin", "TOUCHLINE_NATS_SERVER": ""]).get() == "/usr/sbin/nats-server", "Debian's, off an ordinary PATH")
    }

    @Test func aSettingNamingNothingRunnableIsReportedNotReplaced() {
        guard case .failure(let notFound) = Self.find(["TOUCHLINE_NATS_SERVER": "/nonexistent/nats-server", "PATH": "/usr/local/bin"]) else {
            Issue.record("another server replaced the one the setting names"); return
        }
        #expect(notFound.description == "TOUCHLINE_NATS_SERVER=/nonexistent/nats-server is not an executable file")
    }

    @Test func noServerAnywhereSaysHowToNameOne() {
        guard case .failure(let notFound) = Self.find(["PATH": "/usr/bin"], installed: []) else { Issue.record("a server was found"); return }
        #expect(notFound.description.contains("TOUCHLINE_NATS_SERVER"))
    }
}
