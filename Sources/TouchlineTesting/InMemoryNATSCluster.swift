import Foundation
import NATS
import Synchronization
import TouchlineCore
import TouchlineRuntime

/// A NATS JetStream cluster in the test's own process: several clients (several gateways) connect
/// to it and share its streams, key-value buckets, consumers and subjects, as they would share a
/// real cluster, with the same answers (``MessagingClient`` and ``JetStreamClient``, held to the
/// same contract tests as the servers). Cluster behaviour runs in milliseconds: nothing is written
/// to disk or sent over a socket.
///
/// The cluster's state sits behind one lock, as a server's sits in another process: every call
/// takes it briefly, and whatever it delivers (acknowledgements, messages) is handed to the
/// receiver's loop with `EventLoop.execute` once the call has left it, calls one after another
/// (``perform(_:)``), so every receiver sees the order in which the cluster stored or routed
/// them. Timers (a consumer's acknowledgement wait, delayed redeliveries) run on a loop of the
/// cluster's own.
///
/// Switches inject what a real cluster does to its clients:
/// - ``failPublishes(_:)``: publishes refused with an error, or not answered in time (stored or not);
/// - ``loseQuorum()``/``restoreQuorum()``: every JetStream call times out and nothing is stored;
/// - ``partition(_:)``/``heal(_:)``: a client (by name) is cut off: its JetStream calls time out,
///   its core messages and those to it are dropped, its ordered consumers pause and resume after
///   the last message they delivered, push deliveries go to the group's other members.
///
/// An ordered consumer's ``DeliveryWindow`` holds as on the servers: no more messages handed to
/// its loop than the window has places, the rest delivered as the handler releases them.
///
/// Subject mappings apply to every publish, core and JetStream, as on the servers.
///
/// Not modelled: replicas and leaders (a stream's state names the leader `in-memory`), the time
/// a real cluster takes to answer (a publish that gets no answer fails at once as a timeout,
/// where the client waits for its request timeout).
public final class InMemoryNATSCluster: Sendable {
    /// How publishes fail while ``failPublishes(_:)`` holds.
    public enum PublishFailure: Sendable {
        /// Refused with this error, nothing stored.
        case refused(NATSError)
        /// Not answered in time (``NATSError/isTimeout``); `stored`: the cluster stored it all the
        /// same, the case a writer cannot tell from a lost one.
        case timedOut(stored: Bool)
    }

    /// The servers' `max_payload`.
    public let maximumPayload: Int
    let clock: any WallClock
    let timers = InMemoryTimers()
    let state: Mutex<Server>
    /// Held while what one call decided is handed to the receivers' loops, so that calls hand
    /// off in the order they took `state`. Nothing is released under `state`: a handler or a
    /// completion let go may be the last owner of a subscription, whose release takes `state`.
    private let handOff = Mutex(())

    /// `mappings`: subject mappings as in the servers' configuration, the first that takes a
    /// subject applying.
    public init(clock: any WallClock = SystemClock(), maximumPayload: Int = 1_048_576, mappings: [SubjectMapping] = []) {
        self.clock = clock
        self.maximumPayload = maximumPayload
        var server = Server()
        server.mappings = mappings
        state = Mutex(server)
    }

    deinit { timers.stop() }

    /// A new client named `name` (the gateway's instance: ``partition(_:)`` cuts off every
    /// client of that name).
    public func connect(name: String) -> InMemoryNATSConnection {
        let id = perform { $0.newID() }
        return InMemoryNATSConnection(cluster: self, client: Client(id: id, name: name))
    }

    /// Fails the next `times` publishes that reach a stream (all of them by default) as
    /// `failure`; nil stops failing them.
    public func failPublishes(_ failure: PublishFailure?, times: Int = .max) {
        state.withLock { $0.publishFailure = failure; $0.publishFailuresLeft = times }
    }

    /// How many publishes ``failPublishes(_:times:)`` has failed so far: a test's clock can
    /// follow a writer's attempts with it.
    public var failedPublishes: Int { state.withLock { $0.failedPublishes } }

    /// Loses the next `count` messages the ordered consumers of the clients named `name` would
    /// be handed, as a message lost on the way is: the consumer moves past them, unaware.
    public func loseDeliveries(to name: String, count: Int = 1) { state.withLock { $0.lostDeliveries[name] = count } }

    public func loseQuorum() { state.withLock { $0.quorumLost = true } }

    public func restoreQuorum() { state.withLock { $0.quorumLost = false } }

    public func partition(_ name: String) { state.withLock { _ = $0.partitioned.insert(name) } }

    /// The JetStream calls and publishes of the clients named `name` get no answer, while their
    /// consumers still deliver: a server that routes messages but whose JetStream does not answer
    /// (its meta group without a leader after a quorum loss). `false` answers them again.
    public func answerCalls(of name: String, _ answering: Bool) {
        state.withLock { if answering { $0.unanswering.remove(name) } else { $0.unanswering.insert(name) } }
    }

    /// Reconnects the clients named `name`: their ordered consumers deliver what was stored
    /// meanwhile, and push consumers deliver to them again.
    public func heal(_ name: String) {
        let now = clock.now()
        perform { server in
            server.partitioned.remove(name)
            server.resumeOrderedConsumers(of: name)
            server.pumpAllConsumers(now: now)
        }
    }

    /// Runs `body` on the server, then hands what it delivered to the receivers' loops (in
    /// order) and arms the timers it asked for. A body that cannot fail makes a call that cannot.
    @discardableResult
    func perform<T: Sendable, Failure: Error>(_ body: (inout Server) throws(Failure) -> T) throws(Failure) -> T {
        try handOff.withLock { _ in
            let (result, deliveries, timerRequests) = state.withLock { server in
                let result = Result { () throws(Failure) in try body(&server) }
                return (result, server.takeDeliveries(), server.takeTimerRequests())
            }
            for delivery in deliveries { delivery.loop.execute(delivery.work) }
            for request in timerRequests {
                timers.after(request.delay) { [weak self] in self?.timerFired(request) }
            }
            return result
        }.get()
    }

    private func timerFired(_ request: Server.TimerRequest) {
        let now = clock.now()
        perform { $0.redeliveryDue(request, now: now) }
    }
}

/// One connected client: its number, and the name the switches go by.
struct Client: Hashable, Sendable {
    let id: UInt64
    let name: String
}

extension InMemoryNATSCluster {
    /// Everything the cluster holds. Confined to the cluster's lock.
    struct Server: ~Copyable {
        struct CoreSubscriber: Sendable {
            let client: Client
            let pattern: SubjectPattern
            let queue: String?
            let loop: EventLoop
            let handler: @Sendable (NATSMessage) -> Void
        }

        struct OrderedConsumer: Sendable {
            let client: Client
            let stream: String
            let pattern: SubjectPattern
            let loop: EventLoop
            let handler: @Sendable (NATSMessage) -> Void
            /// At most this many delivered and not yet released by the handler.
            let window: DeliveryWindow?
            /// Delivers again once the window has room.
            let resume: @Sendable () -> Void
            /// The last stream sequence considered: later ones are still to deliver.
            var position: UInt64
        }

        struct PushConsumer {
            var settings: JetStream.PushConsumerSettings
            let pattern: SubjectPattern
            /// The next stream sequence not delivered yet.
            var next: UInt64 = 1
            /// Delivered and not acknowledged: the sequence, with the token of its current
            /// timer (a timer whose token is no longer there does nothing).
            var unacknowledged: [UInt64: UInt64] = [:]
            /// Unacknowledged sequences to deliver again as soon as a member can take them.
            var due: Set<UInt64> = []
        }

        /// Work for a receiver's loop: a message, an acknowledgement.
        struct Delivery: Sendable {
            let loop: EventLoop
            let work: @Sendable () -> Void
        }

        struct TimerRequest: Sendable {
            let delay: Duration
            let consumer: String
            let sequence: UInt64
            let token: UInt64
        }

        var streams: [String: InMemoryStream] = [:]
        var subscribers: [UInt64: CoreSubscriber] = [:]
        var ordered: [UInt64: OrderedConsumer] = [:]
        /// Keyed by "stream/name".
        var consumers: [String: PushConsumer] = [:]
        var partitioned: Set<String> = []
        var unanswering: Set<String> = []
        var mappings: [SubjectMapping] = []
        var closed: Set<UInt64> = []
        var publishFailure: PublishFailure?
        var publishFailuresLeft = Int.max
        var failedPublishes = 0
        /// Per client name, how many ordered-consumer deliveries to it are still to be lost.
        var lostDeliveries: [String: Int] = [:]
        var quorumLost = false
        private var lastID: UInt64 = 0
        /// Which member of each queue group had the last message.
        var queueTurns: [String: Int] = [:]
        private var timerRequests: [TimerRequest] = []
        private var deliveries: [Delivery] = []

        mutating func newID() -> UInt64 {
            lastID += 1
            return lastID
        }

        /// Hands `work` to `loop` once the call that decided it has left the lock.
        mutating func hand(to loop: EventLoop, _ work: @escaping @Sendable () -> Void) {
            deliveries.append(Delivery(loop: loop, work: work))
        }

        mutating func takeDeliveries() -> [Delivery] {
            defer { deliveries = [] }
            return deliveries
        }

        mutating func takeTimerRequests() -> [TimerRequest] {
            defer { timerRequests = [] }
            return timerRequests
        }

        mutating func requestTimer(after delay: Duration, consumer: String, sequence: UInt64) -> UInt64 {
            let token = newID()
            timerRequests.append(TimerRequest(delay: delay, consumer: consumer, sequence: sequence, token: token))
            return token
        }

        func reaches(_ client: Client) -> Bool { !partitioned.contains(client.name) && !closed.contains(client.id) }

        /// Why a JetStream call of `client` gets no answer, if it gets none.
        func unanswered(_ client: Client, _ operation: String) -> NATSError? {
            if closed.contains(client.id) { return .connectionClosed(operation: operation) }
            if quorumLost || partitioned.contains(client.name) || unanswering.contains(client.name) { return .timeout(operation: operation) }
            return nil
        }

        /// Where a publish to `subject` goes, after the first mapping that takes it.
        func mapped(_ subject: String) -> String {
            mappings.lazy.compactMap { $0.map(subject) }.first ?? subject
        }

        func stream(storing subject: String) -> String? {
            streams.first { $0.value.stores(subject) }?.key
        }

        // MARK: Core messages

        /// Hands `message` to every subscriber of its subject (one per queue group); a request
        /// nobody takes is answered with the servers' no-responders status.
        mutating func route(_ published: NATSMessage, now: UnixTime) {
            let message = NATSMessage(subject: mapped(published.subject), reply: published.reply, payload: published.payload,
                                      headers: published.headers)
            if message.subject.hasPrefix(Self.purgePrefix) { return answerPurge(message, now: now) }
            if message.subject.hasPrefix(Self.deletePrefix) { return answerDelete(message, now: now) }
            if message.subject.hasPrefix(Self.messageGetPrefix) { return answerMessageGet(message, now: now) }
            if message.subject.hasPrefix(Self.acknowledgementPrefix) { return acknowledge(message, now: now) }
            var groups: [String: [CoreSubscriber]] = [:]
            var receivers: [CoreSubscriber] = []
            for id in subscribers.keys.sorted() {
                let subscriber = subscribers[id]!
                guard reaches(subscriber.client), subscriber.pattern.matches(message.subject) else { continue }
                if let queue = subscriber.queue { groups["\(queue) \(subscriber.pattern.tokens.joined(separator: "."))", default: []].append(subscriber) } else { receivers.append(subscriber) }
            }
            for (group, members) in groups.sorted(by: { $0.key < $1.key }) {
                let turn = (queueTurns[group].map { $0 + 1 } ?? 0) % members.count
                queueTurns[group] = turn
                receivers.append(members[turn])
            }
            for receiver in receivers {
                let handler = receiver.handler
                hand(to: receiver.loop) { handler(message) }
            }
            if receivers.isEmpty, let reply = message.reply {
                route(NATSMessage(subject: reply, payload: [], headers: ["Status": "503"]), now: now)
            }
        }

        // MARK: JetStream API over core messages

        static let purgePrefix = "$JS.API.STREAM.PURGE."
        static let acknowledgementPrefix = "$JS.ACK."
        static let deletePrefix = "$JS.API.STREAM.MSG.DELETE."
        static let messageGetPrefix = "$JS.API.STREAM.MSG.GET."

        /// `{"seq":N}` to `$JS.API.STREAM.MSG.GET.<stream>`: the stored message with its headers
        /// (base64, as the servers send them), or "no message found".
        private mutating func answerMessageGet(_ request: NATSMessage, now: UnixTime) {
            let name = String(request.subject.dropFirst(Self.messageGetPrefix.count))
            var answer = #"{"error":{"code":404,"err_code":10059,"description":"stream not found"}}"#
            if let stream = streams[name] {
                answer = #"{"error":{"code":404,"err_code":10037,"description":"no message found"}}"#
                if case .integer(let sequence)? = (try? JSONParser.parse(request.payload))?[member: "seq"],
                   let message = stream.messages.first(where: { $0.sequence == UInt64(sequence) }) {
                    let headerBlock = "NATS/1.0\r\n" + message.headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\r\n" }.joined() + "\r\n"
                    answer = #"{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"\#(message.subject)","seq":\#(message.sequence),"hdrs":"\#(Data(headerBlock.utf8).base64EncodedString())","data":"\#(Data(message.payload).base64EncodedString())"}}"#
                }
            }
            if let reply = request.reply { route(NATSMessage(subject: reply, payload: Array(answer.utf8)), now: now) }
        }

        /// `{"seq":N}` to `$JS.API.STREAM.MSG.DELETE.<stream>`: an operator removing one message.
        private mutating func answerDelete(_ request: NATSMessage, now: UnixTime) {
            let name = String(request.subject.dropFirst(Self.deletePrefix.count))
            var answer = #"{"error":{"code":404,"err_code":10059,"description":"stream not found"}}"#
            if streams[name] != nil {
                answer = #"{"error":{"code":404,"err_code":10037,"description":"no message found"}}"#
                if case .integer(let sequence)? = (try? JSONParser.parse(request.payload))?[member: "seq"], sequence > 0,
                   streams[name]!.messages.contains(where: { $0.sequence == UInt64(sequence) }) {
                    streams[name]!.remove(sequence: UInt64(sequence))
                    answer = #"{"type":"io.nats.jetstream.api.v1.stream_msg_delete_response","success":true}"#
                }
            }
            if let reply = request.reply { route(NATSMessage(subject: reply, payload: Array(answer.utf8)), now: now) }
        }

        /// `{"seq":N}` or `{"filter":"subject"}` to `$JS.API.STREAM.PURGE.<stream>`, answered as
        /// the servers answer it.
        private mutating func answerPurge(_ request: NATSMessage, now: UnixTime) {
            let name = String(request.subject.dropFirst(Self.purgePrefix.count))
            let answer: String
            if streams[name] == nil {
                answer = #"{"error":{"code":404,"err_code":10059,"description":"stream not found"}}"#
            } else {
                let body = try? JSONParser.parse(request.payload)
                var purged = 0
                if case .integer(let sequence)? = body?[member: "seq"] {
                    purged = streams[name]!.purge(below: UInt64(max(0, sequence)))
                } else if case .string(let filter)? = body?[member: "filter"] {
                    purged = streams[name]!.purge(matching: filter)
                } else {
                    purged = streams[name]!.purge(matching: ">")
                }
                answer = #"{"type":"io.nats.jetstream.api.v1.stream_purge_response","success":true,"purged":\#(purged)}"#
            }
            if let reply = request.reply { route(NATSMessage(subject: reply, payload: Array(answer.utf8)), now: now) }
        }
    }
}
