import Foundation
import TouchlineCore

/// Single-event requests at a steady total rate, spread evenly over channels and keep-alive
/// connections (each connection owns every K-th channel, so a channel's `seq` grows in one
/// thread only). Each event's patch carries its wall-clock send time, `"sentAt"` (Unix ns),
/// which the broadcast's content-state repeats, so the receiving side can time ingest→APNs.
///
/// Each channel's `seq` starts after `firstSeq`: a channel paced again needs a higher one.
struct PacedEvents {
    /// One request: how long the gateway took to acknowledge it (202, durable), and how late
    /// the load generator itself started it: after its slot, or after the previous answer on its
    /// connection when that came later (time waiting for an answer is the gateway's, and shows in
    /// the acknowledged times; what is left is the generator's own stall).
    struct Timing: Sendable {
        var acknowledged: Double
        var late: Double
    }

    let channels: [String]
    let connections: Int
    let eventsPerChannelPerSecond: Double
    var firstSeq = 0

    /// Sends `seconds` worth of events and returns the timing of each request, in ms.
    func run(seconds: Double, connect: @escaping @Sendable () throws -> HTTPLoadClient) throws -> [Timing] {
        let (ids, connections) = (channels, connections)
        let totalRate = Double(ids.count) * eventsPerChannelPerSecond
        let interval = Double(connections) / totalRate * 1e9
        let perConnection = Int(seconds * totalRate) / connections
        // A little head start so every thread has connected before its first slot.
        let start = monotonicNanoseconds() + 200_000_000
        return try onThreads(connections) { index in
            let client = try connect()
            let owned = stride(from: index, to: ids.count, by: connections).map { ids[$0] }
            var lastSeq = [Int](repeating: firstSeq, count: owned.count)
            let offset = Double(index) * interval / Double(connections)
            let clock = SystemClock()
            var timings: [Timing] = []
            timings.reserveCapacity(perConnection)
            var answered = start
            for slot in 0..<perConnection {
                let due = start + Int64(offset + Double(slot) * interval)
                sleep(untilMonotonic: due)
                let late = Double(monotonicNanoseconds() - max(due, answered)) / 1e6
                let channel = slot % owned.count
                lastSeq[channel] += 1
                let sentAt = clock.now().nanoseconds
                let body = #"{"seq":\#(lastSeq[channel]),"patch":{"sentAt":\#(sentAt)}}"#
                let response = try client.send("POST", "/v1/channels/\(owned[channel])/events", body: Array(body.utf8))
                answered = monotonicNanoseconds()
                timings.append(Timing(acknowledged: Double(clock.now().nanoseconds - sentAt) / 1e6, late: late))
                guard response.status == 202 else {
                    throw LoadError("posting an event to \(owned[channel]) answered \(response.status): \(response.text)")
                }
            }
            return timings
        }.flatMap { $0 }
    }
}
