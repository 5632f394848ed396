import TouchlineCore
import TouchlineStore

/// Where a gateway's channels keep their recorded feeds (``StoreOperation/recordEvents(_:)``),
/// as the export and a channel's restore read them. Blocking: called on the exporting thread,
/// or where channels are loaded.
package protocol FeedRecordings: Sendable {
    /// The recorded events of channel `channelID`, created at `createdAt` (nothing older is
    /// its), in `seq` order, each once, read a page at a time.
    func pages(of channelID: String, createdAt: UnixTime) throws -> any RecordedEventPages
    /// The channel as stored (its end, once it has ended).
    func channel(_ channelID: String) throws -> ChannelRecord?
}

extension FeedRecordings {
    /// What the recording of a channel created at `createdAt` holds (read through: neither
    /// store keeps a recording's size).
    func size(of channelID: String, createdAt: UnixTime) throws -> RecordingSize {
        let pages = try pages(of: channelID, createdAt: createdAt)
        defer { pages.close() }
        var size = RecordingSize()
        while case let page = try pages.next(limit: 1_000), !page.isEmpty { size.add(page) }
        return size
    }

    /// What the recordings of the stored channels `belongs` picks hold, by channel id: read
    /// before the channels are loaded (blocking; where a long read holds nothing up: at start,
    /// or on the thread that reads a cluster partition's log).
    package func sizes(of reader: any ChannelStoreReader, where belongs: (String) -> Bool) throws -> [String: RecordingSize] {
        var sizes: [String: RecordingSize] = [:]
        var after: String?
        while case let page = try reader.channels(after: after, limit: 500), let last = page.last {
            for record in page where belongs(record.id) && FeedRecording.isRecorded(record) {
                sizes[record.id] = try size(of: record.id, createdAt: record.createdAt)
            }
            after = last.id
        }
        return sizes
    }
}

/// What a recording holds: its events, their bytes as posted, and the last one's `seq`.
package struct RecordingSize: Equatable {
    var events = 0
    var bytes = 0
    var lastSeq: Int64 = 0

    mutating func add(_ page: [StoredEvent]) {
        events += page.count
        bytes += page.reduce(0) { $0 + $1.body.count }
        lastSeq = page.last?.seq ?? lastSeq
    }
}

/// A recording read in `seq` order, a page at a time, on the thread that opened it.
package protocol RecordedEventPages: AnyObject {
    /// The next events, at most `limit`; empty once all are read.
    func next(limit: Int) throws -> [StoredEvent]
    /// Lets go of what the reading holds (a store reader); called once, when done.
    func close()
}

/// The embedded store's recording, read with one reader a page at a time after the last `seq`
/// read: memory holds one page, however long the recording.
private final class StoredEventPages: RecordedEventPages {
    let channelID: String
    let reader: any ChannelStoreReader
    var lastSeq = Int64.min

    init(channelID: String, reader: any ChannelStoreReader) {
        (self.channelID, self.reader) = (channelID, reader)
    }

    func next(limit: Int) throws -> [StoredEvent] {
        let page = try reader.events(channelID: channelID, afterSeq: lastSeq, limit: limit)
        if let last = page.last { lastSeq = last.seq }
        return page
    }

    func close() { reader.close() }
}

/// A recording already read whole, handed out in pages.
package final class ReadEventPages: RecordedEventPages {
    var events: ArraySlice<StoredEvent>

    package init(events: [StoredEvent]) { self.events = events[...] }

    package func next(limit: Int) throws -> [StoredEvent] {
        let page = events.prefix(limit)
        events = events.dropFirst(page.count)
        return Array(page)
    }

    package func close() { events = [] }
}

/// The embedded store's recordings: a recording channel's event log, never truncated, read with
/// a reader opened for the call.
package struct StoredFeedRecordings: FeedRecordings {
    let openReader: @Sendable () throws -> any ChannelStoreReader

    package init(openReader: @escaping @Sendable () throws -> any ChannelStoreReader) {
        self.openReader = openReader
    }

    package func pages(of channelID: String, createdAt: UnixTime) throws -> any RecordedEventPages {
        StoredEventPages(channelID: channelID, reader: try openReader())
    }

    package func channel(_ channelID: String) throws -> ChannelRecord? {
        let reader = try openReader()
        defer { reader.close() }
        return try reader.channel(id: channelID)
    }
}
