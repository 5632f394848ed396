import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where finished log lines go: each call receives one complete line, newline included.
///
/// ``standardOutput`` writes each line with one `write(2)` while holding a lock, so lines from
/// different threads never interleave even past the pipe's atomic-write size, and nothing is
/// held in a user-space buffer when the process stops. The lock covers the write only; lines
/// are formatted before it is taken.
public struct LogOutput: Sendable {
    let write: @Sendable ([UInt8]) -> Void

    /// `write` receives each line (UTF-8, ending in `\n`), possibly from several threads at once.
    public init(_ write: @escaping @Sendable ([UInt8]) -> Void) {
        self.write = write
    }

    /// The process's standard output (file descriptor 1).
    public static let standardOutput = LogOutput(fileDescriptor: 1)

    /// Writes to an open file descriptor, retrying short writes and interrupted calls; a line
    /// the descriptor refuses (closed pipe, full disk) is dropped rather than blocking the caller.
    public init(fileDescriptor: Int32) {
        let lock = Mutex(())
        self.init { line in
            lock.withLock { _ in writeWhole(line, to: fileDescriptor) }
        }
    }
}

private func writeWhole(_ line: [UInt8], to fileDescriptor: Int32) {
    line.withUnsafeBytes { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
