import Foundation

/// The machine a run measured: every absolute figure depends on it, so every report names it.
///
/// Fields that cannot be read (another operating system, a container without `/proc`) are
/// "unknown" or nil rather than an error: a report without a CPU model is still a report.
public struct MachineDescription: Sendable, Codable, Equatable {
    /// `model name` of the first CPU in `/proc/cpuinfo`.
    public var cpuModel: String
    /// Logical CPUs the operating system reports.
    public var cpuCount: Int
    /// `MemTotal` of `/proc/meminfo`, in bytes.
    public var memoryTotalBytes: Int?
    /// Kernel name and release from `uname`: `Linux 6.1.0-28-amd64`.
    public var kernel: String
    /// `PRETTY_NAME` of `/etc/os-release`: `Debian GNU/Linux 12 (bookworm)`.
    public var operatingSystem: String
    /// Processes of the kinds a run starts (``loadProcessNames``) that were running when it
    /// began, other than the run itself, as `name (pid N)`: left behind by an earlier run that
    /// crashed (its NATS servers live on), they take CPU that no figure of the run shows. nil
    /// when not looked for (reports written before it was).
    public var otherLoadProcesses: [String]?

    public init(cpuModel: String, cpuCount: Int, memoryTotalBytes: Int?, kernel: String, operatingSystem: String,
                otherLoadProcesses: [String]? = nil) {
        self.cpuModel = cpuModel
        self.cpuCount = cpuCount
        self.memoryTotalBytes = memoryTotalBytes
        self.kernel = kernel
        self.operatingSystem = operatingSystem
        self.otherLoadProcesses = otherLoadProcesses
    }

    /// The names (`/proc/<pid>/comm`, at most 15 characters) of what a run starts.
    static let loadProcessNames: Set<String> = ["nats-server", "touchline", "touchline-mock-", "touchline-load", "h2load"]

    static let unknown = "unknown"

    /// The machine this process runs on.
    public static func current() -> MachineDescription {
        read(fileSystemRoot: "/")
    }

    /// Reads the files under `fileSystemRoot` instead of `/`, so that missing or odd files can
    /// be exercised; the CPU count and the kernel still come from the running system.
    static func read(fileSystemRoot root: String) -> MachineDescription {
        func contents(_ path: String) -> String? {
            try? String(contentsOfFile: (root as NSString).appendingPathComponent(path), encoding: .utf8)
        }
        return MachineDescription(
            cpuModel: contents("proc/cpuinfo").flatMap(cpuModel(fromCPUInfo:)) ?? unknown,
            cpuCount: ProcessInfo.processInfo.processorCount,
            memoryTotalBytes: contents("proc/meminfo").flatMap(memoryTotalBytes(fromMemInfo:)),
            kernel: kernelName() ?? unknown,
            operatingSystem: contents("etc/os-release").flatMap(prettyName(fromOSRelease:)) ?? unknown,
            otherLoadProcesses: otherLoadProcesses(underProc: (root as NSString).appendingPathComponent("proc"), except: getpid()))
    }

    /// The processes under `proc` whose name is one of ``loadProcessNames``, `except` this one,
    /// in process id order.
    static func otherLoadProcesses(underProc proc: String, except own: pid_t) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: proc)) ?? []
        return entries.compactMap { Int32($0) }.filter { $0 != own }.sorted().compactMap { pid in
            guard let comm = try? String(contentsOfFile: "\(proc)/\(pid)/comm", encoding: .utf8) else { return nil }
            let name = comm.trimmingCharacters(in: .whitespacesAndNewlines)
            return loadProcessNames.contains(name) ? "\(name) (pid \(pid))" : nil
        }
    }

    /// One line for a report's header: `AMD EPYC 7B13, 2 CPUs, 7.8 GiB, Debian GNU/Linux 12
    /// (bookworm), Linux 6.1.0-28-amd64`.
    public var summary: String {
        var parts = [cpuModel, cpuCount == 1 ? "1 CPU" : "\(cpuCount) CPUs"]
        if let memoryTotalBytes {
            parts.append(String(format: "%.1f GiB", Double(memoryTotalBytes) / 1_073_741_824))
        }
        parts += [operatingSystem, kernel]
        var summary = parts.joined(separator: ", ")
        if let others = otherLoadProcesses, !others.isEmpty {
            summary += "; \(others.count) other load process\(others.count == 1 ? " was" : "es were") running when the run began "
                + "(\(others.joined(separator: ", "))): their CPU is in no figure"
        }
        return summary
    }

    static func cpuModel(fromCPUInfo text: String) -> String? {
        value(of: "model name", in: text, separator: ":")
            .map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
            .flatMap { $0.isEmpty ? nil : $0 }
    }

    static func memoryTotalBytes(fromMemInfo text: String) -> Int? {
        guard let value = value(of: "MemTotal", in: text, separator: ":") else { return nil }
        let fields = value.split(separator: " ")
        guard let amount = fields.first.flatMap({ Int($0) }) else { return nil }
        let isKiB = fields.count > 1 && fields[1].lowercased() == "kb"
        return isKiB ? amount * 1024 : amount
    }

    static func prettyName(fromOSRelease text: String) -> String? {
        guard let value = value(of: "PRETTY_NAME", in: text, separator: "=") else { return nil }
        let unquoted = value.count >= 2 && (value.first == "\"" || value.first == "'") && value.last == value.first
            ? String(value.dropFirst().dropLast()) : value
        return unquoted.isEmpty ? nil : unquoted
    }

    /// The trimmed value of the first `key<separator>value` line whose key is `key`.
    private static func value(of key: String, in text: String, separator: Character) -> String? {
        for line in text.split(whereSeparator: \.isNewline) {
            guard let index = line.firstIndex(of: separator),
                line[..<index].trimmingCharacters(in: .whitespaces) == key
            else { continue }
            return line[line.index(after: index)...].trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    private static func kernelName() -> String? {
        var names = utsname()
        guard uname(&names) == 0 else { return nil }
        func field<T>(_ tuple: T) -> String {
            withUnsafeBytes(of: tuple) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
        }
        return "\(field(names.sysname)) \(field(names.release))"
    }
}
