import Foundation
import Measurements
import LoadKit
import Testing

@Suite struct ResultsFolderTests {
    let files = FileManager.default

    @Test func writesTheJSONSummaryAndOneChartPerScenarioAndLinksLatest() throws {
        let root = try ReportFixtures.temporaryDirectory()
        defer { try? files.removeItem(atPath: root) }
        let report = ReportFixtures.report()

        let folder = try ResultsFolder.write(report, under: root, label: "nightly")

        #expect(folder == (root as NSString).appendingPathComponent("2026-11-30T15-04-05Z-nightly"))
        #expect(try files.contentsOfDirectory(atPath: folder).sorted() == ["ingest-burst.svg", "matchday.svg", "result.json", "summary.md"])
        let json = try Data(contentsOf: URL(fileURLWithPath: (folder as NSString).appendingPathComponent("result.json")))
        #expect(try BenchmarkReport.decode(fromJSON: json) == report)
        let summary = try String(contentsOfFile: (folder as NSString).appendingPathComponent("summary.md"), encoding: .utf8)
        #expect(summary == MarkdownReport.summary(report, chartLinks: ["matchday": "matchday.svg", "ingest-burst": "ingest-burst.svg"]))
        let chart = try String(contentsOfFile: (folder as NSString).appendingPathComponent("matchday.svg"), encoding: .utf8)
        #expect(chart == SVGChart().render(ReportFixtures.matchday))

        let latest = (root as NSString).appendingPathComponent("latest")
        #expect(try files.destinationOfSymbolicLink(atPath: latest) == "2026-11-30T15-04-05Z-nightly")
        #expect(files.fileExists(atPath: (latest as NSString).appendingPathComponent("result.json")))
    }

    @Test func aSecondRunInTheSameSecondGetsItsOwnFolderAndTheLink() throws {
        let root = try ReportFixtures.temporaryDirectory()
        defer { try? files.removeItem(atPath: root) }
        let first = try ResultsFolder.write(ReportFixtures.report(), under: root)
        let second = try ResultsFolder.write(ReportFixtures.report([ReportFixtures.matchday]), under: root)

        #expect((first as NSString).lastPathComponent == "2026-11-30T15-04-05Z")
        #expect((second as NSString).lastPathComponent == "2026-11-30T15-04-05Z-2")
        #expect(files.fileExists(atPath: (first as NSString).appendingPathComponent("ingest-burst.svg")))
        #expect(try files.destinationOfSymbolicLink(atPath: (root as NSString).appendingPathComponent("latest")) == "2026-11-30T15-04-05Z-2")
    }

    @Test func theRootIsCreatedAndNamesBecomeSafeFileNames() throws {
        let parent = try ReportFixtures.temporaryDirectory()
        defer { try? files.removeItem(atPath: parent) }
        let root = (parent as NSString).appendingPathComponent("results/nested")
        var odd = ReportFixtures.ingestBurst
        odd.name = "../ingest burst"
        let twin = ReportFixtures.ingestBurst

        let folder = try ResultsFolder.write(ReportFixtures.report([odd, twin, ReportFixtures.ingestBurst]), under: root, label: "before release/1")

        #expect((folder as NSString).lastPathComponent == "2026-11-30T15-04-05Z-before-release-1")
        #expect(try files.contentsOfDirectory(atPath: folder).sorted()
            == ["ingest-burst-2.svg", "ingest-burst-3.svg", "ingest-burst.svg", "result.json", "summary.md"])
    }

    @Test func anUnwritableRootIsAnErrorNamingIt() throws {
        let parent = try ReportFixtures.temporaryDirectory()
        defer { try? files.removeItem(atPath: parent) }
        let blocker = (parent as NSString).appendingPathComponent("a-file")
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: blocker))
        let root = (blocker as NSString).appendingPathComponent("results")

        let error = try #require(throws: ResultsFolderError.self) {
            try ResultsFolder.write(ReportFixtures.report(), under: root)
        }
        #expect(error.path == root)
        #expect(error.description.contains(root))
        #expect(error.description.contains("cannot create the results root"))
    }

    @Test func aLatestThatIsNotALinkIsLeftAloneAndNamed() throws {
        let root = try ReportFixtures.temporaryDirectory()
        defer { try? files.removeItem(atPath: root) }
        let latest = (root as NSString).appendingPathComponent("latest")
        try files.createDirectory(atPath: latest, withIntermediateDirectories: false)
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: (latest as NSString).appendingPathComponent("notes.txt")))

        let error = try #require(throws: ResultsFolderError.self) {
            try ResultsFolder.write(ReportFixtures.report(), under: root)
        }
        #expect(error.path == latest)
        #expect(error.description.contains("not a symbolic link"))
        #expect(files.fileExists(atPath: (latest as NSString).appendingPathComponent("notes.txt")))
    }
}
