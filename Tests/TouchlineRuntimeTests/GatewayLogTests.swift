import Foundation
import Synchronization
import Testing
import TestSlots
import TouchlineRuntime

/// The structured log: every line is one JSON object with the documented members, tokens never
/// appear whole, and lines below the level are neither written nor built.
@Suite("Gateway log")
struct GatewayLogTests {
    /// Collects the lines a log writes.
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        var output: LogOutput { LogOutput { [self] line in lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) } } }
        var all: [String] { lines.withLock { $0 } }

        /// Each line parsed as a JSON object (failing the test if one is not).
        func objects() throws -> [[String: String]] {
            try all.map { line in
                #expect(line.hasSuffix("}\n") && line.dropLast().allSatisfy { $0 != "\n" }, "one line per entry: \(line)")
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
                return try #require(object as? [String: String], "\(line)")
            }
        }
    }

    static let token = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"

    @Test func aLineIsOneJSONObjectWithTimeLevelComponentMessageAndTheFieldsGiven() throws {
        let lines = Lines()
        let log = GatewayLog(component: "personal", level: .info, output: lines.output)
        let before = Date()
        log.warning("APNs refused the push", job: "job-7", apnsID: "6F1C0E2A-4C8B-4C0E-9D52-3B0A5C5F0E11",
                    token: RedactedToken(Self.token), error: CocoaError(.fileNoSuchFile))
        log.info("channel created", channel: "match-1")
        let after = Date()
        let objects = try lines.objects()
        #expect(objects.count == 2)
        let first = objects[0]
        #expect(Set(first.keys) == ["time", "level", "component", "message", "job", "apnsId", "token", "error"])
        #expect(first["level"] == "warning")
        #expect(first["component"] == "personal")
        #expect(first["message"] == "APNs refused the push")
        #expect(first["job"] == "job-7")
        #expect(first["apnsId"] == "6F1C0E2A-4C8B-4C0E-9D52-3B0A5C5F0E11")
        #expect(first["token"] == "0a1b2c3d…")
        #expect(first["error"]?.isEmpty == false)
        #expect(Set(objects[1].keys) == ["time", "level", "component", "message", "channel"])
        #expect(objects[1]["channel"] == "match-1")
        #expect(lines.all[0].hasPrefix(#"{"time":""#), "time comes first, so lines sort by time")

        let time = try #require(first["time"])
        #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "RFC 3339, UTC, milliseconds: \(time)")
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let parsed = try #require(parser.date(from: time))
        #expect(parsed >= before.addingTimeInterval(-0.001) && parsed <= after.addingTimeInterval(0.001))
    }

    @Test func messagesAreEscapedSoEveryLineStaysOneValidObject() throws {
        let lines = Lines()
        let log = GatewayLog(component: "api", output: lines.output)
        let message = "quote \" backslash \\ newline \n tab \t bell \u{7} delete \u{7f} ⚽️ é"
        log.error(message, channel: "line\nbreak")
        let object = try #require(try lines.objects().first)
        #expect(object["message"] == message)
        #expect(object["channel"] == "line\nbreak")
    }

    @Test func aTokenIsOnlyEverItsFirstEightCharacters() throws {
        let redacted = RedactedToken(Self.token)
        var dumped = ""
        dump(redacted, to: &dumped)
        for shown in ["\(redacted)", String(reflecting: redacted), dumped, redacted.prefix, "\(Mirror(reflecting: redacted).children.map(\.value))"] {
            #expect(!shown.contains(Self.token.dropFirst(8).prefix(4)), "\(shown)")
        }
        #expect(redacted.description == "0a1b2c3d…")
        #expect(RedactedToken("abcd").description == "ab…", "a short value keeps half")
        #expect(RedactedToken("").description == "…")

        let lines = Lines()
        GatewayLog(component: "personal", level: .debug, output: lines.output).debug("sent", token: redacted)
        #expect(lines.all.count == 1)
        #expect(!lines.all[0].contains(Self.token.dropFirst(8).prefix(4)))
    }

    @Test func linesBelowTheLevelAreNeitherBuiltNorWritten() throws {
        let lines = Lines()
        let log = GatewayLog(component: "channels", level: .notice, output: lines.output)
        let built = Mutex(0)
        func message(_ text: String) -> String {
            built.withLock { $0 += 1 }
            return text
        }
        log.debug(message("debug"))
        log.info(message("info"))
        log.notice(message("notice"))
        log.warning(message("warning"))
        log.error(message("error"))
        log.log(.info, message("info again"))
        #expect(try lines.objects().map { $0["level"] } == ["notice", "warning", "error"])
        #expect(built.withLock { $0 } == 3)
        #expect(!log.isEnabled(.info) && log.isEnabled(.notice))

        let named = log.named("api")
        named.info("dropped")
        named.error("kept")
        #expect(try lines.objects().last?["component"] == "api")
        #expect(lines.all.count == 4)
    }

    @Test func levelsHaveTheirConfigurationNamesInOrder() {
        #expect(LogLevel.allCases.map(\.name) == ["debug", "info", "notice", "warning", "error"])
        #expect(LogLevel.allCases.map { LogLevel(name: $0.name) } == LogLevel.allCases)
        #expect(LogLevel(name: "warn") == nil)
        #expect(LogLevel.debug < .info && LogLevel.warning < .error)
    }

    /// Heavy: eight threads write 10 MB to a file.
    @Test(.heavy) func linesFromManyThreadsNeverInterleaveInAFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("touchline-log-\(UUID().uuidString)").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer { unlink(path) }
        let log = GatewayLog(component: "load", output: LogOutput(fileDescriptor: descriptor))
        // Longer than a pipe's atomic write (4 KiB), so only the lock keeps the lines whole.
        let filler = String(repeating: "x", count: 6_000)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<200 { log.info("\(thread)-\(index) \(filler)", channel: "c\(thread)") }
        }
        close(descriptor)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 1_600)
        var seen = Set<String>()
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
            seen.insert(String(try #require(object["message"]).prefix { $0 != " " }))
        }
        #expect(seen.count == 1_600)
    }
}
