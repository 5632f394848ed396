import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A micro-measurement of durable ingest through group commit: 4 threads, each like a keep-alive
/// connection that waits for its acknowledgement, append batches of 100 events. The rate is
/// printed, never asserted (speed belongs to benchmarks, not unit tests).
@Suite(.serialized, .heavy) struct ThroughputMeasurement {
    @Test(arguments: [SQLiteSynchronous.normal, .full])
    func groupCommitThroughputIsPrinted(synchronous: SQLiteSynchronous) async throws {
        let dir = TemporaryDirectory()
        let writer = try StoreWriter(path: dir.file("store.db"), synchronous: synchronous)
        defer { writer.close() }
        let threads = 4, batchesPerThread = 250, eventsPerBatch = 100
        try await writer.submit(WriteBatch((0..<threads).map { .createChannel(channel("t\($0)")) }))
        let body = Array(#"{"seq":0,"type":"goal","team":"home","player":"A. Player","minute":67,"score":{"home":2,"away":1}}"#.utf8)
        let before = writer.statistics
        let start = DispatchTime.now()
        await onThreads(threads) { thread in
            let id = "t\(thread)"
            for batch in 0..<batchesPerThread {
                let first = Int64(batch * eventsPerBatch + 1)
                let events = (first..<first + Int64(eventsPerBatch)).map {
                    StoredEvent(channelID: id, seq: $0, receivedAt: t0, body: body)
                }
                let last = first + Int64(eventsPerBatch) - 1
                let result = writer.submitAndWait(WriteBatch([
                    .appendEvents(events),
                    .updateState(ChannelStateUpdate(channelID: id, updatedAt: t0, contentState: body, lastSeq: last)),
                ]))
                if case .failure(let error) = result { Issue.record("batch failed: \(error)") }
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let events = threads * batchesPerThread * eventsPerBatch
        let transactions = writer.statistics.transactions - before.transactions
        print("""
            group commit (synchronous=\(synchronous.rawValue)): \(events) events in \(String(format: "%.2f", seconds)) s = \
            \(Int(Double(events) / seconds)) events/s; \(threads * batchesPerThread) batches in \(transactions) transactions
            """)
    }
}
