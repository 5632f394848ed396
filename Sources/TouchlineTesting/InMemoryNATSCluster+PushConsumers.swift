import NATS
import TouchlineCore

/// Durable push consumers (direct ingest): each message to one member of the deliver subject's
/// queue group, at most `maximumAckPending` unacknowledged, delivered again after `ackWait` or
/// after the delay a negative acknowledgement asks for. A delivery's reply subject is
/// `$JS.ACK.<stream>.<consumer>.<sequence>.<token>`, where the acknowledgement goes.
extension InMemoryNATSCluster.Server {
    mutating func ensurePushConsumer(_ settings: JetStream.PushConsumerSettings, client: Client, now: UnixTime) throws(NATSError) {
        let operation = "create consumer \(settings.name) of \(settings.stream)"
        if let failure = unanswered(client, operation) { throw failure }
        guard streams[settings.stream] != nil else { throw NATSError.streamNotFound(operation: operation) }
        let key = "\(settings.stream)/\(settings.name)"
        if consumers[key] == nil {
            consumers[key] = PushConsumer(settings: settings, pattern: SubjectPattern(settings.filterSubject))
        } else {
            consumers[key]!.settings = settings
        }
        pump(key, now: now)
    }

    mutating func pumpAllConsumers(now: UnixTime) {
        for key in consumers.keys.sorted() { pump(key, now: now) }
    }

    /// Delivers what consumer `key` may deliver now: first what is due again, then new messages
    /// while fewer than `maximumAckPending` are unacknowledged, as long as a member can take them.
    mutating func pump(_ key: String, now: UnixTime) {
        guard var consumer = consumers[key], var stream = streams[consumer.settings.stream] else { return }
        stream.expire(now: now)
        streams[consumer.settings.stream] = stream
        defer { consumers[key] = consumer }
        for sequence in consumer.due.sorted() {
            guard let message = stream.messages.first(where: { $0.sequence == sequence }) else {
                // Gone from the stream (purged, aged out): nothing left to deliver.
                consumer.due.remove(sequence)
                consumer.unacknowledged[sequence] = nil
                continue
            }
            guard let member = member(of: consumer.settings) else { return }
            consumer.due.remove(sequence)
            send(message, of: &consumer, key: key, to: member)
        }
        while consumer.unacknowledged.count < consumer.settings.maximumAckPending {
            guard let message = stream.messages.first(where: { $0.sequence >= consumer.next && consumer.pattern.matches($0.subject) }),
                  let member = member(of: consumer.settings) else { return }
            consumer.next = message.sequence + 1
            send(message, of: &consumer, key: key, to: member)
        }
    }

    /// The member of the consumer's queue group that takes the next message (in turn).
    private mutating func member(of settings: JetStream.PushConsumerSettings) -> CoreSubscriber? {
        let members = subscribers.keys.sorted().compactMap { id -> CoreSubscriber? in
            let subscriber = subscribers[id]!
            guard reaches(subscriber.client), subscriber.queue == settings.group, subscriber.pattern.matches(settings.deliverSubject) else { return nil }
            return subscriber
        }
        guard !members.isEmpty else { return nil }
        let group = "consumer \(settings.stream)/\(settings.name)"
        let turn = (queueTurns[group].map { $0 + 1 } ?? 0) % members.count
        queueTurns[group] = turn
        return members[turn]
    }

    private mutating func send(_ stored: InMemoryStream.Message, of consumer: inout PushConsumer, key: String, to member: CoreSubscriber) {
        let token = requestTimer(after: consumer.settings.ackWait, consumer: key, sequence: stored.sequence)
        consumer.unacknowledged[stored.sequence] = token
        let reply = "\(Self.acknowledgementPrefix)\(consumer.settings.stream).\(consumer.settings.name).\(stored.sequence).\(token)"
        let message = NATSMessage(subject: stored.subject, reply: reply, payload: stored.payload, headers: stored.headers)
        let handler = member.handler
        hand(to: member.loop) { handler(message) }
    }

    /// `+ACK` or `-NAK {"delay": nanoseconds}` on a delivery's reply subject.
    mutating func acknowledge(_ message: NATSMessage, now: UnixTime) {
        let tokens = message.subject.dropFirst(Self.acknowledgementPrefix.count).split(separator: ".")
        guard tokens.count >= 4, let sequence = UInt64(tokens[tokens.count - 2]) else { return }
        let key = "\(tokens[0])/\(tokens[1..<(tokens.count - 2)].joined(separator: "."))"
        guard var consumer = consumers[key], consumer.unacknowledged[sequence] != nil else { return }
        let text = String(decoding: message.payload, as: UTF8.self)
        if text.hasPrefix("+ACK") {
            consumer.unacknowledged[sequence] = nil
            consumer.due.remove(sequence)
            consumers[key] = consumer
            if streams[consumer.settings.stream]?.settings.retention == .workQueue { streams[consumer.settings.stream]!.remove(sequence: sequence) }
            return pump(key, now: now)
        }
        guard text.hasPrefix("-NAK") else { return }
        let body = try? JSONParser.parse(Array(message.payload.dropFirst(4)))
        var delay = Duration.zero
        if case .integer(let nanoseconds)? = body?[member: "delay"] { delay = .nanoseconds(nanoseconds) }
        consumers[key]!.unacknowledged[sequence] = requestTimer(after: delay, consumer: key, sequence: sequence)
    }

    /// A delivery's timer went off: unless it was acknowledged or delivered again meanwhile, it
    /// is due again.
    mutating func redeliveryDue(_ request: TimerRequest, now: UnixTime) {
        guard consumers[request.consumer]?.unacknowledged[request.sequence] == request.token else { return }
        consumers[request.consumer]!.due.insert(request.sequence)
        pump(request.consumer, now: now)
    }
}
