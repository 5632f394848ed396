import Testing
import TouchlineCore
@testable import TouchlineStore

struct WriteBatchEncodingTests {
    static let t0 = UnixTime(seconds: 1_767_225_600)

    /// Every operation, with optionals both present and absent, and extreme numbers.
    static let everything = WriteBatch([
        .createChannel(ChannelRecord(id: "league:epl.2026", storagePolicy: .mostRecent, policyJSON: #"{"minInterval":2}"#,
                                     createdAt: t0, contentState: Array(#"{"home":0}"#.utf8))),
        .createChannel(ChannelRecord(id: "m2", apnsChannelID: "dHN0LWNoYW5uZWw=", storagePolicy: .noStorage, status: .ending,
                                     createdAt: t0, updatedAt: t0 + .seconds(5), lastSentState: [1, 2, 3],
                                     lastSentTimestamp: .max, lastSeq: .min, engineSnapshot: [0xff, 0],
                                     end: ChannelEnd(dismissAt: t0 + .seconds(60), endedAt: t0), countersJSON: #"{"pushes":3}"#)),
        .channelCreated(channelID: "m1", apnsChannelID: "YWJj", at: t0),
        .updateState(ChannelStateUpdate(channelID: "m1", updatedAt: t0, contentState: Array("ü".utf8), lastSeq: 7)),
        .updateState(ChannelStateUpdate(channelID: "m1", updatedAt: t0, lastSentState: [], lastSentTimestamp: -1,
                                        engineSnapshot: [9], countersJSON: "{}", policyJSON: "{}")),
        .markStatus(channelID: "m1", status: .ended, end: ChannelEnd(dismissAt: nil, endedAt: t0), at: t0),
        .markStatus(channelID: "m1", status: .broken, end: nil, at: UnixTime(nanoseconds: .min)),
        .deleteChannel(channelID: "m3"),
        .appendEvents([StoredEvent(channelID: "m1", seq: 1, receivedAt: t0, body: Array(#"{"seq":1}"#.utf8)),
                       StoredEvent(channelID: "m1", seq: Int64.max, receivedAt: t0, body: [])]),
        .appendEvents([]),
        .recordEvents([StoredEvent(channelID: "m1", seq: 2, receivedAt: t0 + .milliseconds(3), body: Array(#"{"seq":2}"#.utf8))]),
        .truncateEvents(channelID: "m1", throughSeq: 42),
        .webhook(.record(WebhookOutboxEntry(eventID: "00ff", type: "channel.ended", createdAt: t0, body: Array("{}".utf8),
                                            endpoints: ["a", "b"]))),
        .webhook(.updateDeliveries([WebhookDeliveryUpdate(endpoint: "a", outboxID: 3, attempts: 2, nextAt: t0, status: .dead)])),
        .webhook(.prune(createdBefore: t0, limit: 500)),
    ])

    @Test func everyOperationComesBackAsItWasWritten() throws {
        let bytes = Self.everything.binaryEncoded
        #expect(try WriteBatch(binaryEncoded: bytes) == Self.everything)
        #expect(try WriteBatch(binaryEncoded: WriteBatch().binaryEncoded) == WriteBatch())
    }

    /// A recording's message in the cluster's stream: one event, read back as written; a cut or
    /// a trailing byte is refused.
    @Test func aRecordedEventComesBackAsItWasWritten() throws {
        let event = StoredEvent(channelID: "league:epl.2026", seq: 41, receivedAt: Self.t0 + .nanoseconds(7), body: Array(#"{"seq":41}"#.utf8))
        #expect(try StoredEvent(binaryEncoded: event.binaryEncoded) == event)
        let bytes = event.binaryEncoded
        for length in 0..<bytes.count {
            #expect(throws: BinaryRecordReader.Damaged.self) { try StoredEvent(binaryEncoded: Array(bytes.prefix(length))) }
        }
        #expect(throws: BinaryRecordReader.Damaged.self) { try StoredEvent(binaryEncoded: bytes + [0]) }
    }

    @Test func everyTruncationAndTrailingByteIsRefusedNotMisread() {
        let bytes = Self.everything.binaryEncoded
        for length in 0..<bytes.count {
            #expect(throws: BinaryRecordReader.Damaged.self) { try WriteBatch(binaryEncoded: Array(bytes.prefix(length))) }
        }
        let trailing = #expect(throws: BinaryRecordReader.Damaged.self) { try WriteBatch(binaryEncoded: bytes + [0]) }
        #expect(trailing?.description == "damaged record at byte \(bytes.count): bytes after the last operation")
    }

    @Test func anUnknownVersionTagOrNameIsRefusedWithWhatWasWrong() {
        var bytes = WriteBatch([.deleteChannel(channelID: "m1")]).binaryEncoded
        bytes[0] = 2
        #expect((try? WriteBatch(binaryEncoded: bytes)) == nil)
        let version = #expect(throws: BinaryRecordReader.Damaged.self) { try WriteBatch(binaryEncoded: bytes) }
        #expect(version?.problem == "batch layout version 2 is not known")

        let tag = #expect(throws: BinaryRecordReader.Damaged.self) { try WriteBatch(binaryEncoded: [1, 1, 99]) }
        #expect(tag?.problem == "operation tag 99 is not known")

        var status = BinaryRecordWriter()
        status.byte(1); status.unsigned(1); status.byte(4); status.string("m1"); status.string("sleeping")
        let unknown = #expect(throws: BinaryRecordReader.Damaged.self) { try WriteBatch(binaryEncoded: status.bytes) }
        #expect(unknown?.problem == "\"sleeping\" is not a known ChannelStatus")
    }

    @Test func lengthsBeyondTheEndAndOverlongIntegersAreRefused() {
        // Version, one operation, deleteChannel, then a string length of 2^62.
        var huge = BinaryRecordWriter()
        huge.byte(1); huge.unsigned(1); huge.byte(5); huge.unsigned(1 << 62)
        #expect(throws: BinaryRecordReader.Damaged.self) { try WriteBatch(binaryEncoded: huge.bytes) }
        let overlong = [UInt8](repeating: 0xff, count: 11) + [0]
        var reader = BinaryRecordReader(overlong)
        #expect(throws: BinaryRecordReader.Damaged.self) { try reader.unsigned() }
    }

    @Test func randomBytesNeverTrap() {
        var random = SplitMix64(seed: 14)
        var decoded = 0
        for _ in 0..<20_000 {
            let length = Int(random.next() % 64)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if !bytes.isEmpty { bytes[0] = 1 }
            if (try? WriteBatch(binaryEncoded: bytes)) != nil { decoded += 1 }
        }
        #expect(decoded < 20_000)
    }

    @Test func integersRoundTripAtTheirLimits() throws {
        var writer = BinaryRecordWriter()
        let signed: [Int64] = [.min, -1, 0, 1, 63, 64, -64, -65, .max]
        let unsigned: [UInt64] = [0, 127, 128, 16_383, 16_384, .max]
        signed.forEach { writer.signed($0) }
        unsigned.forEach { writer.unsigned($0) }
        var reader = BinaryRecordReader(writer.bytes)
        #expect(try signed.map { _ in try reader.signed() } == signed)
        #expect(try unsigned.map { _ in try reader.unsigned() } == unsigned)
        #expect(reader.isAtEnd)
    }
}
