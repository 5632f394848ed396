import Dispatch
import Foundation
import NATS
import NATSServers
import Synchronization
import TouchlineRuntime

/// What the cluster itself takes: acknowledged publishes from one connection on the same C
/// client the gateway uses, to streams set up like the gateway's partition logs (one per
/// partition, the same replicas and duplicate window), messages of the gateway's own average
/// size, `window` publishes in flight, for a fixed time. The ceiling a gateway on JetStream is
/// compared with in the same run.
struct JetStreamPublishCeiling {
    var partitions: Int
    var replicas: Int
    var messageBytes: Int
    var window = 256
    var seconds: Double

    struct Outcome {
        var messages: Int
        var seconds: Double
        var rate: Double { Double(messages) / seconds }
    }

    func run(on cluster: NATSCluster) throws -> Outcome {
        let loop = EventLoop.start(name: "ceiling-publisher")
        defer { loop.stopAndWait() }
        let connection = try NATSConnection.connect(NATSSettings(servers: cluster.urls, name: "ceiling", maximumPendingPublishes: window * 2,
                                                                             sendsAtOnce: false),
                                                    loop: loop, events: { _ in })
        defer { connection.close() }
        let jetStream = try JetStream(connection)
        for partition in 0..<partitions {
            try JetStream.retryingWhileForming { () throws(NATSError) in
                try jetStream.ensureStream(.init(name: "CEILING_\(partition)", subjects: ["ceiling.\(partition)"], replicas: replicas,
                                                 duplicateWindow: .seconds(120)))
            }
        }
        let payload = [UInt8](repeating: 0x5a, count: messageBytes)
        let state = Mutex((acknowledged: 0, inFlight: 0, failure: String?.none, sent: 0))
        let done = DispatchSemaphore(value: 0)
        let start = monotonicNanoseconds()
        let deadline = start + Int64(seconds * 1e9)
        @Sendable func publishNext() {
            let number = state.withLock { state -> Int? in
                guard monotonicNanoseconds() < deadline, state.failure == nil else { return nil }
                state.inFlight += 1
                state.sent += 1
                return state.sent
            }
            guard let number else { return }
            jetStream.publish(payload, to: "ceiling.\(number % partitions)", conditions: .init(messageID: "ceiling:\(number)"), loop: loop) { result in
                let finished = state.withLock { state -> Bool in
                    state.inFlight -= 1
                    switch result {
                    case .success: state.acknowledged += 1
                    case .failure(let error): state.failure = state.failure ?? "\(error)"
                    }
                    return state.inFlight == 0 && (monotonicNanoseconds() >= deadline || state.failure != nil)
                }
                if finished { done.signal() } else { publishNext() }
            }
        }
        loop.execute { for _ in 0..<window { publishNext() } }
        done.wait()
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        let outcome = state.withLock { $0 }
        // The streams go with the measure: what they hold (and the servers' caches of it) is
        // no part of the cluster the phases after this one measure.
        for partition in 0..<partitions { try jetStream.deleteStream("CEILING_\(partition)") }
        if let failure = outcome.failure { throw LoadError("the ceiling publisher's publish failed: \(failure)") }
        return Outcome(messages: outcome.acknowledged, seconds: elapsed)
    }
}
