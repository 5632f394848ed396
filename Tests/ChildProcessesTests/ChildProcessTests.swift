import ChildProcesses
import Foundation
import Testing
import TestSlots
#if canImport(Glibc)
import Glibc
#endif

@Suite(.heavy) struct ChildProcessTests {
    @Test func runReturnsTheStatusAndBothStreamsTogether() throws {
        let (termination, output) = try ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(termination == .exited(3))
        #expect(termination.status == 3)
        #expect(output == "out\nerr\n")
    }

    @Test func runSeparatelyKeepsTheStreamsApartEvenWhenOneIsLarge() throws {
        // 1 MiB on standard error before anything on standard output: reading one pipe to its
        // end before the other would never finish.
        let result = try ChildProcess.runSeparately("/bin/sh", ["-c", "head -c 1048576 /dev/zero >&2; echo done"])
        #expect(result.termination == .exited(0))
        #expect(result.output == "done\n")
        #expect(result.errors.utf8.count == 1_048_576)
    }

    @Test func aNameIsLookedUpOnThePathAndAMissingProgramIsNamed() throws {
        #expect(try ChildProcess.run("true", []).termination == .exited(0))
        let failure = #expect(throws: ChildProcess.StartFailure.self) {
            try ChildProcess("/nonexistent/tool", [])
        }
        #expect(failure?.description.contains("/nonexistent/tool") == true)
    }

    @Test func theChildGetsOnlyItsThreeStandardDescriptors() throws {
        // A descriptor the test process leaves inheritable, as C libraries often do, at a high
        // number. F_DUPFD takes the lowest free number from 200 up: dup2 onto a fixed number would
        // silently close whatever a test running beside this one holds there (a loop's wake-up
        // descriptor, a database file).
        let deviceNull = open("/dev/null", O_RDONLY)
        defer { close(deviceNull) }
        let inheritable = fcntl(deviceNull, F_DUPFD, 200)
        defer { close(inheritable) }
        try #require(inheritable >= 200)
        let listing = try ChildProcess.run("/bin/sh", ["-c", "ls /proc/$$/fd"]).output
        #expect(listing.split(separator: "\n").sorted() == ["0", "1", "2"], "\(listing)")
    }

    @Test func theChildStartsWithNoSignalBlockedOrIgnored() async throws {
        // The test process ignores SIGPIPE (harmless here: a broken pipe or socket then fails
        // with EPIPE), and spawns from a thread that blocks SIGUSR2: neither may reach the child.
        signal(SIGPIPE, SIG_IGN)
        let status = try await withCheckedThrowingContinuation { (done: CheckedContinuation<String, Error>) in
            Thread {
                var blocked = sigset_t()
                sigemptyset(&blocked)
                sigaddset(&blocked, SIGUSR2)
                pthread_sigmask(SIG_BLOCK, &blocked, nil)
                done.resume(with: Result { try ChildProcess.run("/bin/grep", ["-E", "^Sig(Blk|Ign):", "/proc/self/status"]).output })
            }.start()
        }
        // Masks in hex, bit n-1 for signal n; glibc keeps the real-time signals from 32 up for
        // itself, so only the standard signals 1...31 are the child's business.
        let masks = Dictionary(uniqueKeysWithValues: status.split(separator: "\n").map { line in
            let parts = line.split(separator: "\t")
            return (String(parts[0]), UInt64(parts[1], radix: 16) ?? .max)
        })
        #expect(masks["SigBlk:"].map { $0 & 0x7fff_ffff } == 0, "\(status)")
        #expect(masks["SigIgn:"].map { $0 & 0x7fff_ffff } == 0, "\(status)")
    }

    @Test func environmentAndDirectoryAreTheOnesGiven() throws {
        #expect(try ChildProcess.run("/usr/bin/env", [], environment: ["ONLY": "this"]).output == "ONLY=this\n")
        #expect(try ChildProcess.run("/bin/pwd", [], directory: "/tmp").output == "/tmp\n")
    }

    @Test func bytesReachStandardInputWhileTheOutputIsRead() throws {
        let input = Data((0..<1_048_576).map { UInt8(truncatingIfNeeded: $0) })
        let child = try ChildProcess("/bin/cat", [], input: .bytes(input))
        #expect(child.output!.readToEnd() == input)
        #expect(child.wait() == .exited(0))
    }

    @Test func closingAPipedInputEndsAChildThatReadsIt() throws {
        let child = try ChildProcess("/bin/sh", ["-c", "read -r line; echo got $line; cat >/dev/null; echo eof"], input: .pipe)
        #expect(child.input!.write(Data("one\n".utf8)))
        #expect(child.isRunning)
        child.input!.close()
        #expect(String(decoding: child.output!.readToEnd(), as: UTF8.self) == "got one\neof\n")
        #expect(child.wait() == .exited(0))
        #expect(!child.isRunning)
    }

    @Test func aKilledChildReportsItsSignalAndLaterSignalsAreHarmless() throws {
        let child = try ChildProcess("/bin/sleep", ["60"], output: .null)
        #expect(child.isRunning)
        child.signal(SIGKILL)
        #expect(child.wait() == .signalled(SIGKILL))
        #expect(child.wait().status == 128 + SIGKILL)
        child.signal(SIGTERM)
        #expect(!child.isRunning)
    }

    @Test func aSignalReachesTheChildWhileAnotherThreadWaitsForIt() async throws {
        let child = try ChildProcess("/bin/sleep", ["60"], output: .null)
        let ended = Task.detached { await child.ended() }
        try await Task.sleep(for: .milliseconds(200))
        let signalled = Thread {
            child.signal(SIGTERM)
        }
        signalled.start()
        #expect(await ended.value == .signalled(SIGTERM))
    }

    @Test func writingToAChildThatIsGoneFailsWithoutEndingTheTestProcess() throws {
        let child = try ChildProcess("/bin/true", [], input: .pipe, output: .null)
        child.wait()
        #expect(!child.input!.write(Data(count: 1_048_576)))
    }
}
