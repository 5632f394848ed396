import Foundation
import LoadKit
import Measurements
import TouchlineCore

/// Events posted as fast as the gateways acknowledge them (or at ``eventsPerSecond``): batches
/// over keep-alive connections, one request at a time each, for a fixed time. An event counts
/// once answered 202 (stored).
/// Each connection owns every K-th channel, so a channel's `seq` grows in one thread only; with
/// several gateways, each connection sends its requests to them in turn (a cluster's gateways
/// hand a channel's batch to its owner), or to the gateway `route` names for the channel (a
/// balancer that routes by channel).
struct EventBurst {
    var connections: Int
    var batchSize: Int
    var seconds: Double
    /// The seq the channels' events start after: a second burst on the same channels starts
    /// past the first's.
    var seqsAfter = 0
    /// The rate to post at, all connections together (nil: as fast as they are acknowledged).
    /// Each connection keeps its own schedule of requests, so a late answer is caught up on.
    var eventsPerSecond: Double?

    struct Outcome {
        var events: Int
        var seconds: Double
        var perSecond: TimeSeries
        var rate: Double { Double(events) / seconds }
    }

    func run(_ ids: [String], gateways: [@Sendable () throws -> HTTPLoadClient], route: (@Sendable (String) -> Int)? = nil) throws -> Outcome {
        let (connections, batchSize, seqsAfter) = (connections, batchSize, seqsAfter)
        let start = monotonicNanoseconds()
        let deadline = start + Int64(seconds * 1e9)
        let requestInterval = eventsPerSecond.map { Int64(Double(connections * batchSize) / $0 * 1e9) }
        let perThread = try onThreads(connections) { index in
            let clients = try gateways.map { try $0() }
            let owned = stride(from: index, to: ids.count, by: connections).map { ids[$0] }
            var lastSeq = [Int](repeating: seqsAfter, count: owned.count)
            var perSecond: [Double] = []
            var turn = 0
            while monotonicNanoseconds() < deadline {
                if let requestInterval {
                    // Connections start spread over one interval, then each keeps its schedule.
                    let due = start + requestInterval * Int64(turn) + requestInterval * Int64(index) / Int64(connections)
                    let wait = due - monotonicNanoseconds()
                    if wait > 0 { Thread.sleep(forTimeInterval: Double(wait) / 1e9) }
                    if monotonicNanoseconds() >= deadline { break }
                }
                let channel = turn % owned.count
                let client = clients[route?(owned[channel]) ?? turn % clients.count]
                turn += 1
                var body = #"{"events":["#
                for number in 0..<batchSize {
                    lastSeq[channel] += 1
                    let seq = lastSeq[channel]
                    body += (number == 0 ? "" : ",") + #"{"seq":\#(seq),"patch":{"home":\#(seq / 7 % 10),"away":\#(seq / 11 % 10),"clock":\#(seq)}}"#
                }
                body += "]}"
                let response = try client.send("POST", "/v1/channels/\(owned[channel])/events", body: Array(body.utf8))
                guard response.status == 202, let reply = try? JSONParser.parse(response.body), case .integer(let accepted)? = reply[member: "accepted"] else {
                    throw LoadError("posting events to \(owned[channel]) answered \(response.status): \(response.text)")
                }
                let second = Int((monotonicNanoseconds() - start) / 1_000_000_000)
                if perSecond.count <= second { perSecond += repeatElement(0, count: second + 1 - perSecond.count) }
                perSecond[second] += Double(accepted)
            }
            return perSecond
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        let series = TimeSeries.joined(perThread.map { (0, TimeSeries(intervalSeconds: 1, values: $0)) })
        return Outcome(events: Int(series.values.reduce(0, +)), seconds: elapsed, perSecond: series)
    }
}
