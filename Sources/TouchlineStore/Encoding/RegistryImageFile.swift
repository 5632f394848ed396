import Glibc
import TouchlineRuntime

/// A registry partition's snapshot as its file's image on disk (``RegistrySnapshot/Layout/fileImage``):
/// written by ``StoreWriter/writeRegistryImage(rules:to:completion:)``, logged a part at a time as
/// the snapshot's header and then the image's bytes, received part by part on a new owner
/// (``RegistrySnapshotReceiver``) and restored by ``StoreWriter/restoreRegistryImage(_:rules:completion:)``.
/// On disk, never whole in memory: a partition's image weighs about 100 MB at 10 million tokens,
/// and a gateway taking partitions up reads several at once.
public struct RegistryImageFile: Sendable, Equatable {
    /// The registry log sequence the file had applied when its image was taken.
    public let sequence: UInt64
    public let path: String
    /// The image's bytes (0 when there is no file at `path`).
    public let imageBytes: Int

    /// The image in the file at `path`, as it is now.
    public init(sequence: UInt64, path: String) {
        self.sequence = sequence
        self.path = path
        var status = stat()
        imageBytes = stat(path, &status) == 0 ? Int(status.st_size) : 0
    }

    /// The snapshot's header as logged: the layout and the sequence.
    public var header: [UInt8] { RegistrySnapshot.writer(.fileImage, at: sequence).bytes }

    /// The bytes logged for this snapshot: the header, then the image.
    public var loggedByteCount: Int { header.count + imageBytes }

    /// The logged bytes in `range` (of ``loggedByteCount``), the image's read from its file.
    public func loggedBytes(_ range: Range<Int>) throws(StoreError) -> [UInt8] {
        let header = header
        let fromHeader = Array(header[min(range.lowerBound, header.count)..<min(range.upperBound, header.count)])
        let fileRange = max(0, range.lowerBound - header.count)..<max(0, range.upperBound - header.count)
        return fileRange.isEmpty ? fromHeader : fromHeader + (try fileBytes(fileRange))
    }

    /// The file's bytes in `range` (up to its end).
    func fileBytes(_ range: Range<Int>) throws(StoreError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .storageFailure("cannot read \(path): errno \(errno)") }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: range.count)
        let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, range.count, off_t(range.lowerBound)) }
        guard read == range.count else { throw .storageFailure("\(path) gave \(read) of \(range.count) bytes at \(range.lowerBound)") }
        return bytes
    }
}

/// A snapshot's logged bytes received part by part: the header read from the first part, every
/// byte after it appended to a file, so that not even a large image is held in memory. Used by
/// one thread at a time (the reading loop's, then the reader's once the parts are in).
public final class RegistrySnapshotReceiver: @unchecked Sendable {
    /// What was received: a file image where it lies, or rows (an earlier build's layout) read back.
    public enum Received: Sendable {
        case image(RegistryImageFile)
        case rows(RegistrySnapshot)
    }

    public let path: String
    private var descriptor: Int32
    private var header: (layout: RegistrySnapshot.Layout, sequence: UInt64)?
    /// Every byte received, the header's included.
    public private(set) var receivedBytes = 0
    /// The bytes after the header: what the file holds.
    private var bodyBytes = 0

    /// Receives into a new file at `path` (replacing any file there).
    public init(path: String) throws(StoreError) {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .storageFailure("cannot create \(path) for a registry snapshot: errno \(errno)") }
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// Takes the next part: the first starts with the header.
    public func add(_ part: [UInt8]) throws {
        receivedBytes += part.count
        var body = part[...]
        if header == nil {
            var reader = BinaryRecordReader(part)
            header = try RegistrySnapshot.header(&reader)
            body = part[reader.offset...]
        }
        let written = body.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == body.count else { throw StoreError.storageFailure("cannot write \(path): errno \(errno)") }
        bodyBytes += body.count
    }

    /// Ends the receiving once every part is in.
    public func finish() throws -> Received {
        close(descriptor)
        descriptor = -1
        guard let header else { throw StoreError.refused("a registry snapshot with no part received") }
        switch header.layout {
        case .fileImage:
            return .image(RegistryImageFile(sequence: header.sequence, path: path))
        case .rows:
            let rows = try RegistryImageFile(sequence: header.sequence, path: path).fileBytes(0..<bodyBytes)
            return .rows(try RegistrySnapshot(binaryEncoded: RegistrySnapshot.writer(.rows, at: header.sequence).bytes + rows))
        }
    }
}
