import TouchlineCore

/// A batch as bytes, for a store that logs batches instead of applying them to SQLite (the
/// JetStream backend's partition log): replaying the decoded batches in order rebuilds the same
/// tables. Version 1; a later layout takes a new version byte, and a reader refuses one it does
/// not know rather than misread it.
extension WriteBatch {
    static let binaryVersion: UInt8 = 1

    public var binaryEncoded: [UInt8] {
        var writer = BinaryRecordWriter()
        writer.byte(Self.binaryVersion)
        writer.unsigned(UInt64(operations.count))
        for operation in operations { writer.operation(operation) }
        return writer.bytes
    }

    public init(binaryEncoded bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        try reader.version(Self.binaryVersion, of: "batch layout")
        let count = try reader.count()
        var operations: [StoreOperation] = []
        operations.reserveCapacity(count)
        for _ in 0..<count { operations.append(try reader.operation()) }
        guard reader.isAtEnd else { throw reader.damaged("bytes after the last operation") }
        self.init(operations)
    }
}

/// One event as bytes: a recording's message in the cluster's stream of recordings (the same
/// layout as in a logged batch, behind a version byte of its own).
extension StoredEvent {
    static let binaryVersion: UInt8 = 1

    public var binaryEncoded: [UInt8] {
        var writer = BinaryRecordWriter()
        writer.byte(Self.binaryVersion)
        writer.storedEvent(self)
        return writer.bytes
    }

    public init(binaryEncoded bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        try reader.version(Self.binaryVersion, of: "event layout")
        self = try reader.storedEvent()
        guard reader.isAtEnd else { throw reader.damaged("bytes after the event") }
    }
}

extension BinaryRecordWriter {
    mutating func operation(_ operation: StoreOperation) {
        switch operation {
        case .createChannel(let record):
            byte(1)
            channel(record)
        case .channelCreated(let channelID, let apnsChannelID, let at):
            byte(2)
            string(channelID)
            string(apnsChannelID)
            time(at)
        case .updateState(let update):
            byte(3)
            stateUpdate(update)
        case .markStatus(let channelID, let status, let end, let at):
            byte(4)
            string(channelID)
            string(status.rawValue)
            optional(end) { $0.end($1) }
            time(at)
        case .deleteChannel(let channelID):
            byte(5)
            string(channelID)
        case .appendEvents(let events):
            byte(6)
            storedEvents(events)
        case .recordEvents(let events):
            byte(9)
            storedEvents(events)
        case .truncateEvents(let channelID, let throughSeq):
            byte(7)
            string(channelID)
            signed(throughSeq)
        case .webhook(let operation):
            byte(8)
            webhook(operation)
        }
    }

    mutating func storedEvents(_ events: [StoredEvent]) {
        unsigned(UInt64(events.count))
        for event in events { storedEvent(event) }
    }

    /// One event: also a recording's message on the cluster.
    mutating func storedEvent(_ event: StoredEvent) {
        string(event.channelID)
        signed(event.seq)
        time(event.receivedAt)
        data(event.body)
    }

    mutating func time(_ value: UnixTime) { signed(value.nanoseconds) }

    mutating func end(_ value: ChannelEnd) {
        optional(value.dismissAt) { $0.time($1) }
        time(value.endedAt)
    }

    mutating func channel(_ record: ChannelRecord) {
        string(record.id)
        optional(record.apnsChannelID) { $0.string($1) }
        string(record.storagePolicy.rawValue)
        string(record.policyJSON)
        string(record.status.rawValue)
        time(record.createdAt)
        time(record.updatedAt)
        data(record.contentState)
        optional(record.lastSentState) { $0.data($1) }
        optional(record.lastSentTimestamp) { $0.signed($1) }
        signed(record.lastSeq)
        optional(record.engineSnapshot) { $0.data($1) }
        optional(record.end) { $0.end($1) }
        string(record.countersJSON)
    }

    mutating func stateUpdate(_ update: ChannelStateUpdate) {
        string(update.channelID)
        time(update.updatedAt)
        optional(update.contentState) { $0.data($1) }
        optional(update.lastSeq) { $0.signed($1) }
        optional(update.lastSentState) { $0.data($1) }
        optional(update.lastSentTimestamp) { $0.signed($1) }
        optional(update.engineSnapshot) { $0.data($1) }
        optional(update.countersJSON) { $0.string($1) }
        optional(update.policyJSON) { $0.string($1) }
    }

    mutating func webhook(_ operation: WebhookOperation) {
        switch operation {
        case .record(let entry):
            byte(1)
            string(entry.eventID)
            string(entry.type)
            time(entry.createdAt)
            data(entry.body)
            unsigned(UInt64(entry.endpoints.count))
            for endpoint in entry.endpoints { string(endpoint) }
        case .updateDeliveries(let updates):
            byte(2)
            unsigned(UInt64(updates.count))
            for update in updates {
                string(update.endpoint)
                signed(update.outboxID)
                signed(Int64(update.attempts))
                time(update.nextAt)
                string(update.status.rawValue)
            }
        case .prune(let createdBefore, let limit):
            byte(3)
            time(createdBefore)
            signed(Int64(limit))
        }
    }
}

extension BinaryRecordReader {
    mutating func operation() throws(Damaged) -> StoreOperation {
        switch try byte() {
        case 1: return .createChannel(try channel())
        case 2: return .channelCreated(channelID: try string(), apnsChannelID: try string(), at: try time())
        case 3: return .updateState(try stateUpdate())
        case 4:
            return .markStatus(channelID: try string(), status: try raw(ChannelStatus.self),
                               end: try optional { reader throws(Damaged) in try reader.end() }, at: try time())
        case 5: return .deleteChannel(channelID: try string())
        case 6: return .appendEvents(try storedEvents())
        case 9: return .recordEvents(try storedEvents())
        case 7: return .truncateEvents(channelID: try string(), throughSeq: try signed())
        case 8: return .webhook(try webhook())
        case let tag: throw damaged("operation tag \(tag) is not known")
        }
    }

    mutating func time() throws(Damaged) -> UnixTime { UnixTime(nanoseconds: try signed()) }

    mutating func storedEvents() throws(Damaged) -> [StoredEvent] {
        var events: [StoredEvent] = []
        for _ in 0..<(try count()) { events.append(try storedEvent()) }
        return events
    }

    /// One event, as ``BinaryRecordWriter/storedEvent(_:)`` wrote it.
    mutating func storedEvent() throws(Damaged) -> StoredEvent {
        StoredEvent(channelID: try string(), seq: try signed(), receivedAt: try time(), body: try data())
    }

    mutating func raw<Value: RawRepresentable<String>>(_: Value.Type) throws(Damaged) -> Value {
        let text = try string()
        guard let value = Value(rawValue: text) else { throw damaged("\"\(text)\" is not a known \(Value.self)") }
        return value
    }

    mutating func end() throws(Damaged) -> ChannelEnd {
        ChannelEnd(dismissAt: try optional { reader throws(Damaged) in try reader.time() }, endedAt: try time())
    }

    mutating func channel() throws(Damaged) -> ChannelRecord {
        let id = try string()
        let apnsChannelID = try optional { reader throws(Damaged) in try reader.string() }
        let storagePolicy = try raw(ChannelStorage.self)
        let policyJSON = try string()
        let status = try raw(ChannelStatus.self)
        let createdAt = try time()
        let updatedAt = try time()
        let contentState = try data()
        let lastSentState = try optional { reader throws(Damaged) in try reader.data() }
        let lastSentTimestamp = try optional { reader throws(Damaged) in try reader.signed() }
        let lastSeq = try signed()
        let engineSnapshot = try optional { reader throws(Damaged) in try reader.data() }
        let end = try optional { reader throws(Damaged) in try reader.end() }
        return ChannelRecord(id: id, apnsChannelID: apnsChannelID, storagePolicy: storagePolicy, policyJSON: policyJSON,
                             status: status, createdAt: createdAt, updatedAt: updatedAt, contentState: contentState,
                             lastSentState: lastSentState, lastSentTimestamp: lastSentTimestamp, lastSeq: lastSeq,
                             engineSnapshot: engineSnapshot, end: end, countersJSON: try string())
    }

    mutating func stateUpdate() throws(Damaged) -> ChannelStateUpdate {
        ChannelStateUpdate(channelID: try string(), updatedAt: try time(),
                           contentState: try optional { reader throws(Damaged) in try reader.data() },
                           lastSeq: try optional { reader throws(Damaged) in try reader.signed() },
                           lastSentState: try optional { reader throws(Damaged) in try reader.data() },
                           lastSentTimestamp: try optional { reader throws(Damaged) in try reader.signed() },
                           engineSnapshot: try optional { reader throws(Damaged) in try reader.data() },
                           countersJSON: try optional { reader throws(Damaged) in try reader.string() },
                           policyJSON: try optional { reader throws(Damaged) in try reader.string() })
    }

    mutating func webhook() throws(Damaged) -> WebhookOperation {
        switch try byte() {
        case 1:
            let eventID = try string()
            let type = try string()
            let createdAt = try time()
            let body = try data()
            var endpoints: [String] = []
            for _ in 0..<(try count()) { endpoints.append(try string()) }
            return .record(WebhookOutboxEntry(eventID: eventID, type: type, createdAt: createdAt, body: body, endpoints: endpoints))
        case 2:
            var updates: [WebhookDeliveryUpdate] = []
            for _ in 0..<(try count()) {
                updates.append(WebhookDeliveryUpdate(endpoint: try string(), outboxID: try signed(), attempts: try int(),
                                                     nextAt: try time(), status: try raw(WebhookDeliveryStatus.self)))
            }
            return .updateDeliveries(updates)
        case 3: return .prune(createdBefore: try time(), limit: try int())
        case let tag: throw damaged("webhook operation tag \(tag) is not known")
        }
    }
}
