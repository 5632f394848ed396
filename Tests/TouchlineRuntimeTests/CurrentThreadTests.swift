import Foundation
import Testing
import TouchlineRuntime

/// Thread names, priorities and time slices reach the kernel (read back from /proc).
@Suite struct CurrentThreadTests {
    /// `/proc/self/task/*/` folders of this process's threads named `name`.
    static func tasks(named name: String) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.map { "/proc/self/task/\($0)" }.filter { folder in
            (try? String(contentsOfFile: folder + "/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }

    /// A field of `/proc/.../sched` ("se.slice : 100000").
    static func schedField(_ field: String, in folder: String) -> Int? {
        guard let text = try? String(contentsOfFile: folder + "/sched", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix(field + " ") }
            .flatMap { $0.split(separator: ":").last }.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    @Test func aLoopIsNamedForTheSystemAndGetsTheSliceItAskedFor() throws {
        let loop = EventLoop.start(name: "slice-test-loop")
        defer { loop.stopAndWait() }
        let folder = try #require(Self.tasks(named: "slice-test-loop").first)
        #expect(try loop.requestShortSlices(.microseconds(100)))
        // Kernels before EEVDF's custom slices keep no such field: nothing more to read back there.
        if let slice = Self.schedField("se.slice", in: folder) {
            #expect(slice == 100_000)
        }
    }

    @Test func aLoweredLoopRunsAtItsNiceness() throws {
        let loop = EventLoop.start(name: "nice-test-loop")
        defer { loop.stopAndWait() }
        #expect(try loop.lowerThreadPriority(niceness: 5))
        let folder = try #require(Self.tasks(named: "nice-test-loop").first)
        let stat = try String(contentsOfFile: folder + "/stat", encoding: .utf8)
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        #expect(fields[16] == "5")
    }
}
