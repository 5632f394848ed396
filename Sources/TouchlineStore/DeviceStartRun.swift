/// One save's started devices as a sorted run: each start's head and key (``GenerationStartRows``),
/// 16 bytes little-endian, ascending, in one `device_start_runs` row (schema version 14).
///
/// A kickoff records every device it starts, thousands a save. One row per start cost the
/// store writer a B-tree insert each, about 1 µs a push and most of the writer's CPU in a
/// kickoff; one row per save costs one insert and a few pages written in sequence. The record
/// is read only when a second kickoff into the same channel runs, a page of its audience at a
/// time: a save's starts span a narrow range of heads (a kickoff goes in token order), so a page
/// meets few runs, each searched by bisection.
enum DeviceStartRun {
    typealias Start = (head: Int64, key: Int64)

    static let bytesPerStart = 16
    /// Starts in one run at most (512 KiB): a save with more (after failed saves, its starts
    /// add up) is written as several runs.
    static let maximumStarts = 32_768

    /// `starts`, which must be sorted, as a run's bytes.
    static func encode(_ starts: ArraySlice<Start>) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(starts.count * bytesPerStart)
        for start in starts {
            withUnsafeBytes(of: start.head.littleEndian) { bytes.append(contentsOf: $0) }
            withUnsafeBytes(of: start.key.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// Whether `run` is whole starts (a length of whole 16-byte pairs).
    static func isWellFormed(_ run: UnsafeRawBufferPointer) -> Bool { run.count % bytesPerStart == 0 }

    /// Whether the run holds `start` (bisection; the run must be well formed).
    static func contains(_ start: Start, in run: UnsafeRawBufferPointer) -> Bool {
        var low = 0, high = run.count / bytesPerStart
        while low < high {
            let middle = (low + high) / 2
            let found = self.start(at: middle, in: run)
            if found == start { return true }
            if (found.head, found.key) < (start.head, start.key) { low = middle + 1 } else { high = middle }
        }
        return false
    }

    private static func start(at index: Int, in run: UnsafeRawBufferPointer) -> Start {
        let offset = index * bytesPerStart
        return (Int64(littleEndian: run.loadUnaligned(fromByteOffset: offset, as: Int64.self)),
                Int64(littleEndian: run.loadUnaligned(fromByteOffset: offset + 8, as: Int64.self)))
    }
}
