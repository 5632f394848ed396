import Foundation
import LoadKit
import Synchronization

/// Events posted to the soak's channels for the whole run, over keep-alive connections that
/// each own every K-th channel (so a channel's `seq` grows in one thread only), paced to a
/// request rate, in batches of 1 to `maxBatch` events of random size.
///
/// Each event is a merge patch `{"seq": n}`, so the channel's state names the last one applied.
/// A provider's rules: the highest `seq` is recorded as sent before the request is written and
/// as acknowledged once a 202 covers it; a batch refused with a 5xx or lost to a kill is sent
/// again unchanged (the `seq` rules make that safe). When told to stop, each connection keeps
/// going until none of its batches waits for an acknowledgement.
struct SoakEventTraffic {
    let channels: [String]
    let connections: Int
    let requestsPerSecondPerConnection: Double
    let maxBatch: Int
    let seed: UInt64

    /// One batch of events `first...last`.
    static func body(_ seqs: ClosedRange<Int64>) -> [UInt8] {
        Array((#"{"events":["# + seqs.map { #"{"seq":\#($0),"patch":{"seq":\#($0)}}"# }.joined(separator: ",") + "]}").utf8)
    }

    /// Starts the connections' threads; `finished` is left once each has stopped.
    func start(target: GatewayTarget, gate: RequestGate, idleLimit: Double, ledger: SoakLedger, tally: SoakTally,
               stop: StopFlag, finished: DispatchGroup) {
        for index in 0..<min(connections, channels.count) {
            let owned = stride(from: index, to: channels.count, by: connections).map { channels[$0] }
            let traffic = self
            finished.enter()
            Thread {
                traffic.post(to: owned, seed: traffic.seed &+ UInt64(index), client: GatedClient(target: target, gate: gate, idleLimit: idleLimit),
                             ledger: ledger, tally: tally, stop: stop)
                finished.leave()
            }.start()
        }
    }

    private func post(to owned: [String], seed: UInt64, client: GatedClient, ledger: SoakLedger, tally: SoakTally, stop: StopFlag) {
        var random = SeededRandom(seed: seed)
        var last = [Int64](repeating: 0, count: owned.count)
        var pending: [Int: ClosedRange<Int64>] = [:]
        let interval = Int64(1e9 / requestsPerSecondPerConnection)
        var due = monotonicNanoseconds()
        var stopDeadline: Int64?
        for turn in 0... {
            if stop.isSet {
                let now = monotonicNanoseconds()
                stopDeadline = stopDeadline ?? now + 60_000_000_000
                if pending.isEmpty || now > stopDeadline! { return }
            }
            let index = turn % owned.count
            guard stopDeadline == nil || pending[index] != nil else { continue }
            let batch = pending[index] ?? {
                let size = Int64(random.integer(in: 1...maxBatch))
                defer { last[index] += size }
                return (last[index] + 1)...(last[index] + size)
            }()
            pending[index] = batch
            ledger.sending(owned[index], upTo: batch.upperBound)
            let answer = client.send("POST", "/v1/channels/\(owned[index])/events", body: Self.body(batch))
            switch tally.judge(answer, request: "POST /v1/channels/\(owned[index])/events", success: [202]) {
            case .done(let response):
                pending[index] = nil
                ledger.acknowledged(owned[index], upTo: batch.upperBound)
                tally.eventsAcknowledged(batch.count)
                if let lastSeq = response.json?.integer("lastSeq"), lastSeq < batch.upperBound {
                    tally.violation("202 for \(owned[index]) seq \(batch) answered lastSeq \(lastSeq)")
                }
            case .retry(let seconds):
                Thread.sleep(forTimeInterval: seconds)
            }
            due = max(due + interval, monotonicNanoseconds() - interval)
            sleep(untilMonotonic: due)
        }
    }
}
