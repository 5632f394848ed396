import ChildProcesses
import Foundation
@testable import NATSServers
import Testing

/// Servers left running by a process that crashed (its exit handlers never ran) are killed by
/// the next process that starts a cluster; nothing else is.
@Suite("Server reaper")
struct ServerReaperTests {
    @Test func serversOfAnOwnerThatIsGoneAreKilledAndNothingElse() async throws {
        let directory = NSTemporaryDirectory() + "/reaper-\(UUID().uuidString)"
        let records = directory + "/records"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = directory + "/node-0.conf"
        // Stand-ins for servers: processes whose arguments name a configuration file.
        let orphan = try ChildProcess("/bin/sh", ["-c", "sleep 60; exit 0", configuration], output: .null)
        let owned = try ChildProcess("/bin/sh", ["-c", "sleep 60; exit 0", directory + "/node-1.conf"], output: .null)
        let reused = try ChildProcess("/bin/sh", ["-c", "sleep 60; exit 0"], output: .null)
        defer { for process in [owned, reused] { process.signal(SIGKILL) } }
        let gone = try ChildProcess("/bin/true", [], output: .null)
        _ = await gone.ended()

        ServerReaper.record(orphan.pid, owner: gone.pid, configurationFile: configuration, in: records)
        ServerReaper.record(owned.pid, owner: getpid(), configurationFile: directory + "/node-1.conf", in: records)
        // An owner gone and a pid that runs something else now (reused): left alone, forgotten.
        ServerReaper.record(reused.pid, owner: gone.pid, configurationFile: directory + "/node-2.conf", in: records)

        #expect(ServerReaper.reapOrphans(recordedIn: records) == [orphan.pid])
        #expect(await orphan.ended() == .signalled(SIGKILL))
        #expect(try FileManager.default.contentsOfDirectory(atPath: records) == ["\(owned.pid)"], "the live owner's server stays recorded")
        #expect(kill(owned.pid, 0) == 0 && kill(reused.pid, 0) == 0)
    }
}
