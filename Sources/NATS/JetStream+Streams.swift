import CNATS
import Dispatch
import Glibc
import Synchronization
import TouchlineRuntime

/// Streams, key-value buckets and ordered consumers. Creating and inspecting streams waits for
/// the cluster (a JetStream API request): call it at start or from a dedicated thread, never
/// from a loop. Consumers deliver to a loop.
extension JetStream {
    /// A stream as Touchline creates it. Everything it stores lives on `replicas` servers.
    public struct StreamSettings: Sendable, Equatable {
        public enum Retention: Sendable, Equatable {
            /// Kept until a limit (age, size, per-subject count) removes it: events, key-value entries.
            case limits
            /// Removed once a consumer acknowledges it: work to hand out once (pages of a fan-out).
            case workQueue
        }

        public var name: String
        public var subjects: [String]
        public var replicas: Int
        public var retention: Retention
        /// Older messages are removed past this age (nil: kept).
        public var maximumAge: Duration?
        /// Messages kept per subject (nil: all); 1 keeps the last value, as a key-value bucket does.
        public var maximumMessagesPerSubject: Int?
        /// How long a message id is remembered for deduplication.
        public var duplicateWindow: Duration
        public var maximumMessageSize: Int?
        /// The stream's size limit (on each of its servers); what a publish beyond it meets is
        /// ``whenFull``.
        public var maximumBytes: Int?
        public var whenFull: WhenFull

        /// What a full stream does with one more message.
        public enum WhenFull: Sendable, Equatable {
            /// Refuses it (nothing stored is ever dropped): logs whose every message counts.
            case refuseNew
            /// Drops its oldest messages to make room: records worth keeping only while fresh.
            case dropOldest
        }

        public init(name: String, subjects: [String], replicas: Int = 3, retention: Retention = .limits,
                    maximumAge: Duration? = nil, maximumMessagesPerSubject: Int? = nil,
                    duplicateWindow: Duration = .seconds(120), maximumMessageSize: Int? = nil, maximumBytes: Int? = nil,
                    whenFull: WhenFull = .refuseNew) {
            self.name = name
            self.subjects = subjects
            self.replicas = replicas
            self.retention = retention
            self.maximumAge = maximumAge
            self.maximumMessagesPerSubject = maximumMessagesPerSubject
            self.duplicateWindow = duplicateWindow
            self.maximumMessageSize = maximumMessageSize
            self.maximumBytes = maximumBytes
            self.whenFull = whenFull
        }
    }

    /// What a stream holds now.
    public struct StreamState: Sendable, Equatable {
        public var messages: UInt64
        public var bytes: UInt64
        public var firstSequence: UInt64
        public var lastSequence: UInt64
        public var replicas: Int
        /// The server that orders the stream's writes (nil when none is elected).
        public var leader: String?

        public init(messages: UInt64, bytes: UInt64, firstSequence: UInt64, lastSequence: UInt64, replicas: Int, leader: String?) {
            self.messages = messages
            self.bytes = bytes
            self.firstSequence = firstSequence
            self.lastSequence = lastSequence
            self.replicas = replicas
            self.leader = leader
        }
    }

    /// Creates the stream, or updates one of that name to these settings; returns its state.
    @discardableResult
    public func ensureStream(_ settings: StreamSettings) throws(NATSError) -> StreamState {
        var subjects = settings.subjects.map { strdup($0) }
        defer { subjects.forEach { free($0) } }
        var config = jsStreamConfig()
        try NATSError.check(jsStreamConfig_Init(&config), "stream settings")
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = settings.name.withCString { name in
            subjects.withUnsafeMutableBufferPointer { buffer in
                config.Name = name
                config.SubjectsLen = Int32(buffer.count)
                config.Subjects = UnsafeMutableRawPointer(buffer.baseAddress!).assumingMemoryBound(to: UnsafePointer<CChar>?.self)
                config.Replicas = Int64(settings.replicas)
                config.Storage = js_FileStorage
                config.Retention = settings.retention == .limits ? js_LimitsPolicy : js_WorkQueuePolicy
                config.MaxAge = settings.maximumAge.map { $0.milliseconds * 1_000_000 } ?? 0
                config.MaxMsgsPerSubject = settings.maximumMessagesPerSubject.map(Int64.init) ?? -1
                config.Duplicates = settings.duplicateWindow.milliseconds * 1_000_000
                config.MaxMsgSize = settings.maximumMessageSize.map(Int32.init) ?? -1
                config.MaxBytes = settings.maximumBytes.map(Int64.init) ?? -1
                config.Discard = settings.whenFull == .dropOldest ? js_DiscardOld : js_DiscardNew
                let added = js_AddStream(&info, context, &config, nil, &code)
                guard added != NATS_OK, code == JSStreamNameExistErr else { return added }
                code = jsErrCode(0)
                return js_UpdateStream(&info, context, &config, nil, &code)
            }
        }
        defer { jsStreamInfo_Destroy(info) }
        try NATSError.check(status, jetStreamCode: code, "create stream \(settings.name)")
        return Self.state(of: info!)
    }

    /// The stream's state, or nil if there is no stream of that name.
    public func streamState(_ name: String) throws(NATSError) -> StreamState? {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = js_GetStreamInfo(&info, context, name, nil, &code)
        defer { jsStreamInfo_Destroy(info) }
        if status == NATS_NOT_FOUND || code == JSStreamNotFoundErr { return nil }
        try NATSError.check(status, jetStreamCode: code, "read stream \(name)")
        return Self.state(of: info!)
    }

    /// Deletes `name` and everything it holds on every replica; blocking. A stream that does not
    /// exist is no error.
    public func deleteStream(_ name: String) throws(NATSError) {
        var code = jsErrCode(0)
        let status = js_DeleteStream(context, name, nil, &code)
        if status == NATS_NOT_FOUND || code == JSStreamNotFoundErr { return }
        try NATSError.check(status, jetStreamCode: code, "delete stream \(name)")
    }

    /// How many messages `stream` holds on `subject` (0 when none, or the stream does not
    /// exist); blocking.
    public func messageCount(stream: String, subject: String) throws(NATSError) -> UInt64 {
        var options = jsOptions()
        try NATSError.check(jsOptions_Init(&options), "JetStream options")
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = subject.withCString { filter in
            options.Stream.Info.SubjectsFilter = filter
            return js_GetStreamInfo(&info, context, stream, &options, &code)
        }
        defer { jsStreamInfo_Destroy(info) }
        if status == NATS_NOT_FOUND || code == JSStreamNotFoundErr { return 0 }
        try NATSError.check(status, jetStreamCode: code, "count the messages of \(subject) in \(stream)")
        guard let subjects = info?.pointee.State.Subjects?.pointee, let list = subjects.List else { return 0 }
        return (0..<Int(subjects.Count)).reduce(0) { total, index in total + list[index].Msgs }
    }

    /// The last message stored on `subject` in `stream` (its payload, and its sequence as
    /// ``NATSMessage/stream``), or nil if it has none.
    public func lastMessage(stream: String, subject: String) throws(NATSError) -> (payload: [UInt8], sequence: UInt64)? {
        var message: OpaquePointer?
        var code = jsErrCode(0)
        let status = js_GetLastMsg(&message, context, stream, subject, nil, &code)
        defer { natsMsg_Destroy(message) }
        if status == NATS_NOT_FOUND || code == JSNoMessageFoundErr { return nil }
        try NATSError.check(status, jetStreamCode: code, "read the last message of \(subject)")
        return (NATSMessage(copying: message!, jetStream: false).payload, natsMsg_GetSequence(message))
    }

    private static func state(of info: UnsafeMutablePointer<jsStreamInfo>) -> StreamState {
        let state = info.pointee.State
        return StreamState(messages: state.Msgs, bytes: state.Bytes, firstSequence: state.FirstSeq,
                           lastSequence: state.LastSeq, replicas: Int(info.pointee.Config?.pointee.Replicas ?? 0),
                           leader: info.pointee.Cluster?.pointee.Leader.map { String(cString: $0) })
    }

    /// A key-value bucket: a stream (`KV_<name>`) keeping the last `history` values of each key
    /// on subjects `$KV.<name>.<key>`. Writes are publishes to ``keySubject(bucket:key:)``,
    /// reads an ordered consumer from ``DeliveryStart/lastPerSubject``: the same messages the
    /// client's own key-value calls exchange, without blocking a loop. For a compare-and-set
    /// that holds on several replicas, expect the stream's last sequence
    /// (``PublishConditions/expectedLastSequence``), not the key's: see docs/cluster.md.
    /// Creating an existing bucket with the same settings succeeds.
    public func ensureKeyValueBucket(_ name: String, replicas: Int, history: Int, maximumValueSize: Int, maximumBytes: Int?) throws(NATSError) {
        var config = kvConfig()
        try NATSError.check(kvConfig_Init(&config), "bucket settings")
        var bucket: OpaquePointer?
        let status = name.withCString { bucketName in
            config.Bucket = bucketName
            config.Replicas = Int32(replicas)
            config.History = UInt8(clamping: history)
            config.MaxValueSize = Int32(maximumValueSize)
            config.MaxBytes = maximumBytes.map(Int64.init) ?? -1
            config.StorageType = js_FileStorage
            return js_CreateKeyValue(&bucket, context, &config)
        }
        kvStore_Destroy(bucket)
        do {
            try NATSError.check(status, "create key-value bucket \(name)")
        } catch where error.detail.contains("configuration is different") || error.detail.contains("with a different configuration") {
            try limitExistingBucket(name, maximumBytes: maximumBytes)
        } catch {
            throw error.withJetStreamCodeOfItsWords
        }
    }

    /// Gives a bucket made before its size limit existed that limit, keeping the rest of the
    /// settings the servers gave it (the C client creates buckets but does not update them).
    private func limitExistingBucket(_ name: String, maximumBytes: Int?) throws(NATSError) {
        let stream = "KV_\(name)"
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let read = js_GetStreamInfo(&info, context, stream, nil, &code)
        defer { jsStreamInfo_Destroy(info) }
        try NATSError.check(read, jetStreamCode: code, "read key-value bucket \(name)")
        guard let config = info?.pointee.Config else { throw NATSError(status: NATS_ERR.rawValue, operation: "read key-value bucket \(name)", detail: "no settings") }
        config.pointee.MaxBytes = maximumBytes.map(Int64.init) ?? -1
        var updated: UnsafeMutablePointer<jsStreamInfo>?
        let status = js_UpdateStream(&updated, context, config, nil, &code)
        jsStreamInfo_Destroy(updated)
        try NATSError.check(status, jetStreamCode: code, "limit key-value bucket \(name)")
    }

    /// The subject a bucket stores `key` under.
    public static func keySubject(bucket: String, key: String) -> String { "$KV.\(bucket).\(key)" }

    /// Where an ordered consumer starts.
    public enum DeliveryStart: Sendable, Equatable {
        /// Everything the stream holds.
        case all
        /// The last message of each subject, then every new one: a key-value bucket's watch.
        case lastPerSubject
        /// From this stream sequence on: replay after a snapshot that covers the ones before.
        case sequence(UInt64)
        /// Only messages stored from now on.
        case new
    }

    /// An ordered consumer of `subject` (wildcards allowed): every stored message once, in
    /// stream order, on `loop`. The client recreates the consumer from the next sequence after a
    /// gap or a lost server, so the order holds across reconnects; nothing is acknowledged.
    /// `window`: at most that many messages handed to the loop and not yet released by the
    /// handler (``DeliveryWindow``); unbounded without one.
    public func subscribeOrdered(to subject: String, from start: DeliveryStart, loop: EventLoop, window: DeliveryWindow?,
                                 handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> any MessageSubscription {
        let sink = MessageSink(loop: loop, jetStream: true, window: window, handler: handler)
        let closure = Unmanaged.passRetained(sink).toOpaque()
        var options = jsSubOptions()
        jsSubOptions_Init(&options)
        options.Ordered = true
        switch start {
        case .all: options.Config.DeliverPolicy = js_DeliverAll
        case .lastPerSubject: options.Config.DeliverPolicy = js_DeliverLastPerSubject
        case .sequence(let sequence):
            options.Config.DeliverPolicy = js_DeliverByStartSequence
            options.Config.OptStartSeq = sequence
        case .new: options.Config.DeliverPolicy = js_DeliverNew
        }
        var subscription: OpaquePointer?
        var code = jsErrCode(0)
        let status = js_Subscribe(&subscription, context, subject, MessageSink.callback, closure, nil, &options, &code)
        return try NATSSubscription.finish(status, subscription, subject: subject, context: closure, connection: connection, jetStreamCode: code)
    }

    /// A durable push consumer that hands each message to one subscriber of a queue group on its
    /// deliver subject, and waits for that message's acknowledgement (``acknowledge(_:)``) before
    /// it delivers more than `maximumAckPending`: with 1, a stream's messages are worked through
    /// strictly in order, one at a time. A message not acknowledged within `ackWait` is
    /// delivered again. The subscribers are core subscriptions
    /// (``NATSSubscription/subscribe(_:to:queue:loop:handler:)``) to `deliverSubject` with
    /// `group` as their queue, so a subscriber that goes away leaves the consumer and its
    /// position in place for the next. Creating it again with the same settings succeeds.
    public struct PushConsumerSettings: Sendable, Equatable {
        public var stream: String
        public var name: String
        public var filterSubject: String
        public var deliverSubject: String
        public var group: String
        public var maximumAckPending: Int
        public var ackWait: Duration

        public init(stream: String, name: String, filterSubject: String, deliverSubject: String, group: String, maximumAckPending: Int = 1,
                    ackWait: Duration = .seconds(5)) {
            self.stream = stream
            self.name = name
            self.filterSubject = filterSubject
            self.deliverSubject = deliverSubject
            self.group = group
            self.maximumAckPending = maximumAckPending
            self.ackWait = ackWait
        }
    }

    /// Creates the consumer, or leaves it as it is when it exists with these settings (a
    /// JetStream API request: not on a loop).
    public func ensurePushConsumer(_ settings: PushConsumerSettings) throws(NATSError) {
        var config = jsConsumerConfig()
        try NATSError.check(jsConsumerConfig_Init(&config), "consumer settings")
        var info: UnsafeMutablePointer<jsConsumerInfo>?
        var code = jsErrCode(0)
        let status = settings.name.withCString { name in
            settings.filterSubject.withCString { filter in
                settings.deliverSubject.withCString { deliver in
                    settings.group.withCString { group in
                        config.Durable = name
                        config.FilterSubject = filter
                        config.DeliverSubject = deliver
                        config.DeliverGroup = group
                        config.DeliverPolicy = js_DeliverAll
                        config.AckPolicy = js_AckExplicit
                        config.MaxAckPending = Int64(settings.maximumAckPending)
                        config.AckWait = settings.ackWait.milliseconds * 1_000_000
                        return js_AddConsumer(&info, context, settings.stream, &config, nil, &code)
                    }
                }
            }
        }
        jsConsumerInfo_Destroy(info)
        try NATSError.check(status, jetStreamCode: code, "create consumer \(settings.name) of \(settings.stream)")
    }

    /// Blocks until a publish to `subject` reaches the stream that stores it, for at most
    /// `limit`: a stream or bucket just made may not be heard by every server yet, and a publish
    /// through one that has not heard it gets no responders. The probe's condition can never
    /// hold (the subject's last message at the highest sequence), so nothing is stored: the
    /// stream's refusal is the answer waited for. From a starting thread, never on `loop`, which
    /// only receives the answers.
    public static func waitUntilHeard(subject: String, jetStream: any JetStreamClient, loop: EventLoop,
                                      for limit: Duration = .seconds(30)) throws(NATSError) {
        try retryingWhileForming(for: limit) { () throws(NATSError) in
            let answered = DispatchSemaphore(value: 0)
            let outcome = Mutex<Result<JetStream.Acknowledgement, NATSError>?>(nil)
            jetStream.publish([], to: subject, conditions: PublishConditions(expectedLastSubjectSequence: .max), loop: loop) { result in
                outcome.withLock { $0 = result }
                answered.signal()
            }
            answered.wait()
            switch outcome.withLock({ $0! }) {
            case .failure(let error) where error.isWrongLastSequence: return
            case .failure(let error): throw error
            case .success:
                throw NATSError(status: NATS_ERR.rawValue, jetStreamCode: 0, operation: "probe \(subject)",
                                detail: "a publish whose condition cannot hold was stored")
            }
        }
    }

    /// Runs a JetStream API call made at start again while the cluster answers as one that is
    /// forming (``NATSError/isClusterForming``), for at most `limit`: a cluster just started, or
    /// electing a leader after a node was lost, answers with timeouts, "no suitable peers for
    /// placement" and "no leader" for seconds. Then the last answer is thrown.
    @discardableResult
    public static func retryingWhileForming<T>(for limit: Duration = .seconds(30), _ call: () throws(NATSError) -> T) throws(NATSError) -> T {
        let deadline = ContinuousClock.now + limit
        while true {
            do {
                return try call()
            } catch where error.isClusterForming && ContinuousClock.now < deadline {
                usleep(200_000)
            }
        }
    }
}
