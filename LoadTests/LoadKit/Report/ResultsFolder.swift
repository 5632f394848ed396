import Foundation
import Measurements

/// Where a run's results go: one folder per run, named by its UTC start time, holding
/// `result.json`, `summary.md` and one chart per scenario, with `latest` pointing at the newest.
///
/// ```
/// results/
///   2026-11-30T15-04-05Z-before-release/
///     result.json  summary.md  matchday.svg  kickoff-storm.svg
///   latest -> 2026-11-30T15-04-05Z-before-release
/// ```
public enum ResultsFolder {
    /// Writes `report` into a new folder under `root` (created if needed) and points
    /// `root/latest` at it.
    ///
    /// - Parameter label: appended to the folder name (`-label`) to tell runs apart; characters
    ///   other than letters, digits, `.`, `_` and `-` become `-`.
    /// - Returns: the path of the new folder. When a folder of the same name exists already (two
    ///   runs in the same second), `-2`, `-3`, ... is appended rather than overwriting it.
    /// - Throws: `ResultsFolderError` naming the path that could not be written.
    @discardableResult
    public static func write(_ report: BenchmarkReport, under root: String, label: String? = nil) throws -> String {
        let files = FileManager.default
        try attempt(root, "cannot create the results root") {
            try files.createDirectory(atPath: root, withIntermediateDirectories: true)
        }
        let baseName = ReportDate.folderName(report.startedAt) + (label.map { "-" + fileName($0) } ?? "")
        let folderName = try createFolder(named: baseName, under: root)
        let folder = (root as NSString).appendingPathComponent(folderName)

        let json = try attempt((folder as NSString).appendingPathComponent("result.json"), "cannot encode the report") {
            try report.jsonData()
        }
        try save(json, to: folder, "result.json")
        var chartLinks: [String: String] = [:]
        var usedNames: Set<String> = []
        for scenario in report.scenarios {
            let name = chartName(fileName(scenario.name), avoiding: &usedNames)
            chartLinks[scenario.name] = chartLinks[scenario.name] ?? name
            try save(Data(SVGChart().render(scenario).utf8), to: folder, name)
        }
        try save(Data(MarkdownReport.summary(report, chartLinks: chartLinks).utf8), to: folder, "summary.md")
        try pointLatest(under: root, at: folderName)
        return folder
    }

    /// A name safe as one path component and in a shell: letters, digits, `.`, `_` and `-`,
    /// starting with neither `.` (hidden, or `..`) nor `-` (an option); never empty.
    static func fileName(_ text: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        let mapped = text.map { allowed.contains($0) ? $0 : "-" }.drop { $0 == "." || $0 == "-" }
        return mapped.isEmpty ? "unnamed" : String(mapped)
    }

    /// `stem.svg`, or `stem-2.svg`, ... when two scenarios share a name.
    private static func chartName(_ stem: String, avoiding used: inout Set<String>) -> String {
        var (candidate, counter) = ("\(stem).svg", 1)
        while used.contains(candidate) {
            counter += 1
            candidate = "\(stem)-\(counter).svg"
        }
        used.insert(candidate)
        return candidate
    }

    private static func createFolder(named baseName: String, under root: String) throws -> String {
        var (name, counter) = (baseName, 1)
        while true {
            let path = (root as NSString).appendingPathComponent(name)
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
                return name
            } catch {
                guard FileManager.default.fileExists(atPath: path) else {
                    throw ResultsFolderError(path: path, reason: "cannot create the run folder", underlying: error)
                }
                counter += 1
                name = "\(baseName)-\(counter)"
            }
        }
    }

    private static func save(_ data: Data, to folder: String, _ name: String) throws {
        let path = (folder as NSString).appendingPathComponent(name)
        try attempt(path, "cannot write the file") { try data.write(to: URL(fileURLWithPath: path)) }
    }

    /// Replaces `root/latest` with a relative link to the new folder (relative, so that the
    /// results tree can be moved or copied whole). Refuses to replace anything but a link.
    private static func pointLatest(under root: String, at folderName: String) throws {
        let files = FileManager.default
        let latest = (root as NSString).appendingPathComponent("latest")
        if let type = try? files.attributesOfItem(atPath: latest)[.type] as? FileAttributeType {
            guard type == .typeSymbolicLink else {
                throw ResultsFolderError(path: latest, reason: "exists and is not a symbolic link; not replacing it", underlying: nil)
            }
            try attempt(latest, "cannot remove the previous link") { try files.removeItem(atPath: latest) }
        }
        try attempt(latest, "cannot create the link") {
            try files.createSymbolicLink(atPath: latest, withDestinationPath: folderName)
        }
    }

    private static func attempt<T>(_ path: String, _ reason: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw ResultsFolderError(path: path, reason: reason, underlying: error)
        }
    }
}

/// A results folder could not be written: which path, and why.
public struct ResultsFolderError: Error, CustomStringConvertible, Sendable {
    /// The file or folder that could not be created or written.
    public let path: String
    public let reason: String
    /// The system's own account, when there is one.
    public let detail: String?

    init(path: String, reason: String, underlying: (any Error)?) {
        self.path = path
        self.reason = reason
        detail = underlying.map { ($0 as NSError).localizedDescription }
    }

    public var description: String {
        "results: \(path): \(reason)" + (detail.map { " (\($0))" } ?? "")
    }
}
