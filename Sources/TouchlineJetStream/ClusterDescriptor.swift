import Dispatch
import NATS
import Synchronization
import TouchlineRuntime

/// What every gateway of a cluster must agree on before it writes anything: the partition
/// count, which decides which partition's log a channel's events go to. The first gateway to
/// start records it in a stream of its own (`<PREFIX>_CLUSTER`, one message); every later one
/// reads it and refuses to start, naming both counts, if its own setting differs.
public enum ClusterDescriptor {
    public struct Mismatch: Error, Sendable, CustomStringConvertible {
        public let recorded: Int
        public let configured: Int
        public let prefix: String
        public var description: String {
            "the cluster's streams (prefix \(prefix)) were made for \(recorded) partitions, but this gateway is set to \(configured): "
                + "set store.partitions to \(recorded) (changing it would move every channel to another partition)"
        }
    }

    public struct Unreadable: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Records `partitions` if the cluster has no count yet, or checks it against the recorded
    /// one. Blocking (JetStream API calls and a publish waited for): call it while starting,
    /// never on a loop; `loop` only receives the publish's acknowledgement.
    public static func agree(partitions: Int, prefix: String, replicas: Int, jetStream: any JetStreamClient, loop: EventLoop) throws {
        let stream = prefix.uppercased() + "_CLUSTER", subject = "\(prefix).cluster"
        try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureStream(.init(name: stream, subjects: [subject], replicas: replicas, maximumMessagesPerSubject: 1,
                                             maximumBytes: 1 << 20))
        }
        for _ in 0..<3 {
            if let recorded = try JetStream.retryingWhileForming({ () throws(NATSError) in try jetStream.lastMessage(stream: stream, subject: subject) }) {
                guard let text = String(validating: recorded.payload, as: UTF8.self), text.hasPrefix("partitions "),
                      let count = Int(text.dropFirst("partitions ".count)) else {
                    throw Unreadable(description: "\(stream) holds \(recorded.payload.count) bytes that are not a partition count")
                }
                guard count == partitions else { throw Mismatch(recorded: count, configured: partitions, prefix: prefix) }
                return
            }
            // Nobody recorded it yet: the first to store it (into the empty stream) sets it. A
            // stream just made may not be heard by every server yet (no responders): nothing is
            // stored then, and the publish is sent again while the cluster forms.
            let stored = try JetStream.retryingWhileForming { () throws(NATSError) -> Bool in
                let done = DispatchSemaphore(value: 0)
                let outcome = Mutex<Result<JetStream.Acknowledgement, NATSError>?>(nil)
                jetStream.publish(Array("partitions \(partitions)".utf8), to: subject, conditions: .init(expectedLastSequence: 0), loop: loop) { result in
                    outcome.withLock { $0 = result }
                    done.signal()
                }
                done.wait()
                switch outcome.withLock({ $0! }) {
                case .success: return true
                case .failure(let error) where error.isWrongLastSequence: return false  // another gateway was first: read its count
                case .failure(let error): throw error
                }
            }
            if stored { return }
        }
    }
}
