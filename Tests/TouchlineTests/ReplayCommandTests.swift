import APNsMock
import Foundation
import Testing
import TestSlots

/// `touchline replay`: the summary on standard output and the chart in a file for a good feed;
/// a one-line error naming the problem, with its own exit status, for everything else.
@Suite("touchline replay", .heavy)
struct ReplayCommandTests {
    @Test(.enabled(if: ServeProcess.isAvailable, "needs the touchline executable"))
    func aFeedIsSummarizedAndChartedAndEveryProblemIsNamed() async throws {
        let directory = try MockAPNsDevelopmentCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let feed = directory + "/match.jsonl", chart = directory + "/match.svg"
        try FeedReplayTests.match().write(toFile: feed, atomically: true, encoding: .utf8)

        let good = try await ServeProcess.runToEnd(["replay", feed, "--svg", chart, "--policy", #"{"lowImportanceIntervalSeconds": 60}"#])
        #expect(good.status == 0, "\(good.output)")
        #expect(good.output.contains("replay of m-1 (football): 600 events") && good.output.contains("\"lowImportanceIntervalSeconds\":60"), "\(good.output)")
        #expect(try String(contentsOfFile: chart, encoding: .utf8).hasPrefix("<?xml"))

        let broken = directory + "/broken.jsonl"
        try (FeedReplayTests.header + "\n{\"receivedAt\": 1}\n").write(toFile: broken, atomically: true, encoding: .utf8)
        let malformed = try await ServeProcess.runToEnd(["replay", broken])
        #expect(malformed.status == 65 && malformed.output.contains("line 2: field 'receivedAt' must be a string"), "\(malformed.output)")
        let policy = try await ServeProcess.runToEnd(["replay", feed, "--policy", #"{"burst": 0}"#])
        #expect(policy.status == 65 && policy.output.contains("policy member 'burst'"), "\(policy.output)")
        let missing = try await ServeProcess.runToEnd(["replay", directory + "/none.jsonl"])
        #expect(missing.status == 66 && missing.output.contains("cannot read"), "\(missing.output)")
        let noFeed = try await ServeProcess.runToEnd(["replay"])
        #expect(noFeed.status == 64 && noFeed.output.contains("give one recorded feed"), "\(noFeed.output)")
        let latency = try await ServeProcess.runToEnd(["replay", feed, "--apns-latency", "-5"])
        #expect(latency.status == 64 && latency.output.contains("--apns-latency"), "\(latency.output)")
    }
}
