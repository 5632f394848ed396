import TouchlineCore

/// The tables as bytes: a snapshot that a JetStream store restores instead of replaying its
/// whole log (it replays only the batches after the snapshot's log sequence). Version 1,
/// decoded as defensively as a batch; rows in a fixed order, so equal tables give equal bytes.
extension ChannelTables {
    static let binaryVersion: UInt8 = 1

    public var binaryEncoded: [UInt8] {
        var writer = BinaryRecordWriter()
        writer.byte(Self.binaryVersion)
        let ids = channels.keys.sorted(by: Self.precedes)
        writer.unsigned(UInt64(ids.count))
        for id in ids {
            writer.channel(channels[id]!)
            let logged = (events[id] ?? [:]).values.sorted { $0.seq < $1.seq }
            writer.unsigned(UInt64(logged.count))
            for event in logged {
                writer.signed(event.seq)
                writer.time(event.receivedAt)
                writer.data(event.body)
            }
        }
        let rows = outbox.values.sorted { $0.id < $1.id }
        writer.unsigned(UInt64(rows.count))
        for row in rows {
            writer.signed(row.id)
            writer.string(row.eventID)
            writer.string(row.type)
            writer.time(row.createdAt)
            writer.data(row.body)
        }
        let pending = deliveries.sorted { a, b in
            a.key.outboxID != b.key.outboxID ? a.key.outboxID < b.key.outboxID : Self.precedes(a.key.endpoint, b.key.endpoint)
        }
        writer.unsigned(UInt64(pending.count))
        for (key, delivery) in pending {
            writer.string(key.endpoint)
            writer.signed(key.outboxID)
            writer.signed(Int64(delivery.attempts))
            writer.time(delivery.nextAt)
            writer.string(delivery.status.rawValue)
        }
        writer.signed(lastOutboxID)
        return writer.bytes
    }

    public init(binaryEncoded bytes: [UInt8]) throws(BinaryRecordReader.Damaged) {
        var reader = BinaryRecordReader(bytes)
        try reader.version(Self.binaryVersion, of: "tables layout")
        self.init()
        for _ in 0..<(try reader.count()) {
            let record = try reader.channel()
            store(record)
            var logged: [Int64: StoredEvent] = [:]
            for _ in 0..<(try reader.count()) {
                let event = StoredEvent(channelID: record.id, seq: try reader.signed(), receivedAt: try reader.time(), body: try reader.data())
                logged[event.seq] = event
            }
            if !logged.isEmpty { events[record.id] = logged }
        }
        for _ in 0..<(try reader.count()) {
            let row = StoredWebhookEvent(id: try reader.signed(), eventID: try reader.string(), type: try reader.string(),
                                         createdAt: try reader.time(), body: try reader.data())
            outbox[row.id] = row
            outboxIDs[row.eventID] = row.id
        }
        for _ in 0..<(try reader.count()) {
            let key = DeliveryKey(endpoint: try reader.string(), outboxID: try reader.signed())
            deliveries[key] = Delivery(attempts: try reader.int(), nextAt: try reader.time(), status: try reader.raw(WebhookDeliveryStatus.self))
        }
        lastOutboxID = try reader.signed()
        guard reader.isAtEnd else { throw reader.damaged("bytes after the tables") }
    }
}
