import NATS
import TouchlineCore
import TouchlineRuntime

/// Stores and ordered consumers: what a publish stores, and who sees it.
extension InMemoryNATSCluster.Server {
    /// Stores a publish of `client` and delivers it; the answer, which the caller hands to the
    /// publisher's loop.
    mutating func publish(_ payload: [UInt8], to subject: String, headers: [String: String], conditions: JetStream.PublishConditions,
                          from client: Client, maximumPayload: Int, now: UnixTime) -> Result<JetStream.Acknowledgement, NATSError> {
        let operation = "publish to \(subject)"
        if let failure = unanswered(client, operation) { return .failure(failure) }
        if payload.count > maximumPayload { return .failure(.payloadTooLarge(operation: operation)) }
        let subject = mapped(subject)
        guard let name = stream(storing: subject) else { return .failure(.noResponders(operation: operation)) }
        let failure = publishFailure
        if failure != nil {
            failedPublishes += 1
            publishFailuresLeft -= 1
            if publishFailuresLeft <= 0 { publishFailure = nil }
        }
        switch failure {
        case .refused(let error)?: return .failure(error)
        case .timedOut(stored: false)?: return .failure(.timeout(operation: operation))
        case .timedOut(stored: true)?, nil: break
        }
        let result = streams[name]!.store(payload, subject: subject, headers: headers, conditions: conditions, now: now, operation: operation)
        if case .success(let acknowledgement) = result, !acknowledgement.duplicate {
            deliverStored(in: name, now: now)
        }
        if case .timedOut(stored: true)? = failure { return .failure(.timeout(operation: operation)) }
        return result
    }

    /// Hands what `stream` stored since each consumer's position to its ordered consumers, and
    /// lets its push consumers deliver.
    mutating func deliverStored(in stream: String, now: UnixTime) {
        for id in ordered.keys.sorted() where ordered[id]!.stream == stream {
            catchUp(id)
        }
        for key in consumers.keys.sorted() where consumers[key]!.settings.stream == stream {
            pump(key, now: now)
        }
    }

    /// Delivers to ordered consumer `id` every matching message after its position (nothing
    /// while its client is cut off), as far as its window lets it.
    mutating func catchUp(_ id: UInt64) {
        guard let consumer = ordered[id], reaches(consumer.client), let stream = streams[consumer.stream] else { return }
        let messages = stream.messages(matching: consumer.pattern, from: .sequence(consumer.position + 1))
        ordered[id]!.position = deliver(messages, of: stream, to: consumer) ?? consumer.position
    }

    mutating func resumeOrderedConsumers(of name: String) {
        for id in ordered.keys.sorted() where ordered[id]!.client.name == name { catchUp(id) }
    }

    /// Starts an ordered consumer: what `start` selects now, then every later message.
    /// `resume(id)` is called when its window has room again.
    mutating func subscribeOrdered(to subject: String, from start: JetStream.DeliveryStart, client: Client, loop: EventLoop,
                                   window: DeliveryWindow?, resume: @escaping @Sendable (UInt64) -> Void,
                                   handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> UInt64 {
        let operation = "subscribe to \(subject)"
        if let failure = unanswered(client, operation) { throw failure }
        guard let name = stream(storing: subject), let stream = streams[name] else { throw NATSError.streamNotFound(operation: operation) }
        let id = newID()
        var consumer = OrderedConsumer(client: client, stream: name, pattern: SubjectPattern(subject), loop: loop, handler: handler,
                                       window: window, resume: { resume(id) }, position: 0)
        let selected = stream.messages(matching: consumer.pattern, from: start)
        consumer.position = deliver(selected, of: stream, to: consumer) ?? selected.first.map { $0.sequence - 1 } ?? stream.lastSequence
        ordered[id] = consumer
        return id
    }

    /// Hands `messages` to the consumer's loop in order while its window has room; the position
    /// it reached: the stream's last sequence when every one went, else the last one that went
    /// (nil: none did).
    private mutating func deliver(_ messages: [InMemoryStream.Message], of stream: InMemoryStream, to consumer: OrderedConsumer) -> UInt64? {
        let handler = consumer.handler
        var reached: UInt64?
        for (index, stored) in messages.enumerated() {
            if let window = consumer.window, !window.take(orWhenFree: consumer.resume) { return reached }
            let message = NATSMessage(subject: stored.subject, payload: stored.payload, headers: stored.headers,
                                      stream: .init(stream: stream.settings.name, sequence: stored.sequence,
                                                    pending: UInt64(messages.count - index - 1), timestampNanoseconds: stored.storedAt.nanoseconds))
            reached = stored.sequence
            if let lost = lostDeliveries[consumer.client.name], lost > 0 {
                lostDeliveries[consumer.client.name] = lost - 1
                continue
            }
            hand(to: consumer.loop) { handler(message) }
        }
        return stream.lastSequence
    }

    mutating func ensureStream(_ settings: JetStream.StreamSettings, client: Client, now: UnixTime) throws(NATSError) -> JetStream.StreamState {
        if let failure = unanswered(client, "create stream \(settings.name)") { throw failure }
        if streams[settings.name] == nil { streams[settings.name] = InMemoryStream(settings) } else { streams[settings.name]!.update(settings) }
        streams[settings.name]!.expire(now: now)
        return streams[settings.name]!.state
    }

    /// The stream of `name` as it is now, messages past their age gone.
    mutating func read(_ name: String, client: Client, now: UnixTime, _ operation: String) throws(NATSError) -> InMemoryStream? {
        if let failure = unanswered(client, operation) { throw failure }
        streams[name]?.expire(now: now)
        return streams[name]
    }
}
