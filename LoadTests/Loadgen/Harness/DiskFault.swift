import Foundation

/// Fills the gateway's disk and frees it again.
///
/// Preferred: a real filesystem of its own, a small tmpfs holding the data directory (mounting
/// needs root), filled to the last byte with a filler file and freed by deleting it: SQLite then
/// meets a real `ENOSPC` wherever it writes. Otherwise the gateway's test hook: while the file
/// named by `TOUCHLINE_STORE_FAULT_FILE` exists, every commit of both stores fails as on a full
/// disk (docs/api.md, "Durability").
final class DiskFault {
    enum Mode: String, Sendable {
        case tmpfs
        case faultFile = "fault-file"
    }

    /// What the run asked for: `auto` takes a tmpfs when one can be mounted.
    enum Choice: String, Sendable {
        case auto, tmpfs
        case faultFile = "fault-file"
    }

    let mode: Mode
    /// Where the gateway keeps its data.
    let dataDirectory: String
    /// What the gateway's environment needs for this mode.
    let environment: [String: String]
    private let mountPoint: String?
    private let faultFile: String
    private var filler: String { (mountPoint ?? "") + "/filler" }

    /// Prepares the data directory under `directory`: on a tmpfs of `bytes` bytes, or plain.
    init(_ choice: Choice, under directory: String, bytes: Int) throws {
        faultFile = directory + "/disk-full"
        let mountPoint = directory + "/disk"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mounted = choice != .faultFile && getuid() == 0
            && runTool("/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", mountPoint])
        if choice == .tmpfs && !mounted { throw LoadError("cannot mount a tmpfs for the data directory (needs root); try --disk-fault fault-file") }
        mode = mounted ? .tmpfs : .faultFile
        self.mountPoint = mounted ? mountPoint : nil
        dataDirectory = mountPoint + "/data"
        environment = mounted ? [:] : ["TOUCHLINE_STORE_FAULT_FILE": faultFile]
    }

    /// The disk is full from now on: the filler takes every free byte, or the fault file exists.
    func fill() {
        guard mode == .tmpfs else {
            _ = FileManager.default.createFile(atPath: faultFile, contents: Data())
            return
        }
        let descriptor = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        // Large writes while they fit, then smaller ones, down to the last byte.
        var size = 1 << 20
        let block = [UInt8](repeating: 0xA5, count: size)
        while size > 0 {
            let written = block.withUnsafeBytes { write(descriptor, $0.baseAddress, size) }
            if written <= 0 { size /= 2 }
        }
    }

    /// The disk has room again.
    func free() {
        try? FileManager.default.removeItem(atPath: mode == .tmpfs ? filler : faultFile)
    }

    /// Frees the disk and unmounts the tmpfs (the gateway must be stopped first).
    func release() {
        free()
        if let mountPoint { _ = runTool("/bin/umount", ["-l", mountPoint]) }
    }
}
