import Dispatch
import NATS
import Synchronization
import TouchlineRuntime

/// What every gateway of a cluster must agree on before it writes anything: the partition
/// count, which decides which partition's log a channel's events go to, and how the token
/// registry is held. The first gateway to start records each in a stream of its own
/// (`<PREFIX>_CLUSTER` and `<PREFIX>_CLUSTER_REGISTRY`, one message each); every later one
/// reads them and refuses to start, naming both values, if its own settings differ.
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

    /// The registry layout the cluster's first gateway recorded differs from this gateway's.
    public struct RegistryMismatch: Error, Sendable, CustomStringConvertible {
        public let recorded: String
        public let configured: String
        public let prefix: String
        public var description: String {
            "the cluster (prefix \(prefix)) holds its token registry \(recorded), but this gateway is set to \(configured): "
                + "set store.registry to \"\(recorded)\" (a cluster's gateways must hold the registry alike)"
        }
    }

    /// Records `partitions` if the cluster has no count yet, or checks it against the recorded
    /// one. Blocking (JetStream API calls and a publish waited for): call it while starting,
    /// never on a loop; `loop` only receives the publish's acknowledgement.
    public static func agree(partitions: Int, prefix: String, replicas: Int, jetStream: any JetStreamClient, loop: EventLoop) throws {
        let stream = prefix.uppercased() + "_CLUSTER"
        let recorded = try settle("partitions \(partitions)", stream: stream, subject: "\(prefix).cluster", replicas: replicas,
                                  jetStream: jetStream, loop: loop)
        guard recorded.hasPrefix("partitions "), let count = Int(recorded.dropFirst("partitions ".count)) else {
            throw Unreadable(description: "\(stream) holds \(recorded.utf8.count) bytes that are not a partition count")
        }
        guard count == partitions else { throw Mismatch(recorded: count, configured: partitions, prefix: prefix) }
    }

    /// Records how the gateways hold the token registry (`layout`: `shared` or `partitioned`)
    /// if the cluster has not recorded it yet, or checks it against the recorded one: gateways
    /// holding it otherwise would each miss what the others write. Blocking, like
    /// ``agree(partitions:prefix:replicas:jetStream:loop:)``.
    public static func agree(registry layout: String, prefix: String, replicas: Int, jetStream: any JetStreamClient, loop: EventLoop) throws {
        let recorded = try settle("registry \(layout)", stream: prefix.uppercased() + "_CLUSTER_REGISTRY", subject: "\(prefix).cluster.registry",
                                  replicas: replicas, jetStream: jetStream, loop: loop)
        guard recorded == "registry \(layout)" else {
            throw RegistryMismatch(recorded: String(recorded.dropFirst("registry ".count).prefix(32)), configured: layout, prefix: prefix)
        }
    }

    /// The registry layout the cluster recorded (`shared` or `partitioned`), with the record's
    /// sequence; nil when it recorded none: a cluster whose gateways predate the record, which
    /// held the registry shared, or one no gateway started on yet. Blocking.
    public static func recordedRegistry(prefix: String, jetStream: any JetStreamClient) throws -> (layout: String, sequence: UInt64)? {
        let stream = prefix.uppercased() + "_CLUSTER_REGISTRY"
        guard try JetStream.retryingWhileForming({ () throws(NATSError) in try jetStream.streamState(stream) }) != nil,
              let recorded = try JetStream.retryingWhileForming({ () throws(NATSError) in
                  try jetStream.lastMessage(stream: stream, subject: "\(prefix).cluster.registry")
              }) else { return nil }
        guard let text = String(validating: recorded.payload, as: UTF8.self), text.hasPrefix("registry ") else {
            throw Unreadable(description: "\(stream) holds \(recorded.payload.count) bytes that are not a registry layout")
        }
        return (String(text.dropFirst("registry ".count)), recorded.sequence)
    }

    /// Records `layout` in place of the record at `sequence` (nil: the cluster recorded none), for
    /// `touchline migrate --shared-registry` once the registry was copied into the new layout.
    /// Refused, changing nothing, if the record changed since it was read. Blocking.
    public static func changeRegistry(to layout: String, replacing sequence: UInt64?, prefix: String, replicas: Int,
                                      jetStream: any JetStreamClient, loop: EventLoop) throws {
        let stream = prefix.uppercased() + "_CLUSTER_REGISTRY"
        try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureStream(.init(name: stream, subjects: ["\(prefix).cluster.registry"], replicas: replicas,
                                             maximumMessagesPerSubject: 1, maximumBytes: 1 << 20))
        }
        try JetStream.retryingWhileForming { () throws(NATSError) in
            _ = try publish("registry \(layout)", to: "\(prefix).cluster.registry", expectingLast: sequence ?? 0, jetStream: jetStream, loop: loop).get()
        }
    }

    /// Publishes `text` to `subject` if its stream's last sequence is `last`, and waits for the answer.
    private static func publish(_ text: String, to subject: String, expectingLast last: UInt64, jetStream: any JetStreamClient,
                                loop: EventLoop) -> Result<JetStream.Acknowledgement, NATSError> {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<JetStream.Acknowledgement, NATSError>?>(nil)
        jetStream.publish(Array(text.utf8), to: subject, conditions: .init(expectedLastSequence: last), loop: loop) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0! }
    }

    /// The text the cluster holds on `subject` of `stream` (one message): `proposal`, if this
    /// gateway is the first to store one, else the first gateway's.
    private static func settle(_ proposal: String, stream: String, subject: String, replicas: Int, jetStream: any JetStreamClient,
                               loop: EventLoop) throws -> String {
        try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureStream(.init(name: stream, subjects: [subject], replicas: replicas, maximumMessagesPerSubject: 1,
                                             maximumBytes: 1 << 20))
        }
        for _ in 0..<3 {
            if let recorded = try JetStream.retryingWhileForming({ () throws(NATSError) in try jetStream.lastMessage(stream: stream, subject: subject) }) {
                guard let text = String(validating: recorded.payload, as: UTF8.self) else {
                    throw Unreadable(description: "\(stream) holds \(recorded.payload.count) bytes that are not text")
                }
                return text
            }
            // Nobody recorded it yet: the first to store it (into the empty stream) sets it. A
            // stream just made may not be heard by every server yet (no responders): nothing is
            // stored then, and the publish is sent again while the cluster forms.
            let stored = try JetStream.retryingWhileForming { () throws(NATSError) -> Bool in
                switch publish(proposal, to: subject, expectingLast: 0, jetStream: jetStream, loop: loop) {
                case .success: return true
                case .failure(let error) where error.isWrongLastSequence: return false  // another gateway was first: read its record
                case .failure(let error): throw error
                }
            }
            if stored { return proposal }
        }
        throw Unreadable(description: "\(stream) was written and emptied three times while this gateway read it: no record to agree on")
    }
}
