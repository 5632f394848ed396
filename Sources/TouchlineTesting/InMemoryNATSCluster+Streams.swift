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
        guard let name = stream(storing: subject) else { return .failure(.noResponders(operation: operation)) }
        switch publishFailure {
        case .refused(let error)?: return .failure(error)
        case .timedOut(stored: false)?: return .failure(.timeout(operation: operation))
        case .timedOut(stored: true)?, nil: break
        }
        let result = streams[name]!.store(payload, subject: subject, headers: headers, conditions: conditions, now: now, operation: operation)
        if case .success(let acknowledgement) = result, !acknowledgement.duplicate {
            deliverStored(in: name, now: now)
        }
        if case .timedOut(stored: true)? = publishFailure { return .failure(.timeout(operation: operation)) }
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
    /// while its client is cut off).
    mutating func catchUp(_ id: UInt64) {
        guard let consumer = ordered[id], reaches(consumer.client), let stream = streams[consumer.stream] else { return }
        let messages = stream.messages(matching: consumer.pattern, from: .sequence(consumer.position + 1))
        deliver(messages, of: stream.settings.name, to: consumer)
        ordered[id]!.position = stream.lastSequence
    }

    mutating func resumeOrderedConsumers(of name: String) {
        for id in ordered.keys.sorted() where ordered[id]!.client.name == name { catchUp(id) }
    }

    /// Starts an ordered consumer: what `start` selects now, then every later message.
    mutating func subscribeOrdered(to subject: String, from start: JetStream.DeliveryStart, client: Client, loop: EventLoop,
                                   handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> UInt64 {
        let operation = "subscribe to \(subject)"
        if let failure = unanswered(client, operation) { throw failure }
        guard let name = stream(storing: subject), let stream = streams[name] else { throw NATSError.streamNotFound(operation: operation) }
        let id = newID()
        let consumer = OrderedConsumer(client: client, stream: name, pattern: SubjectPattern(subject), loop: loop, handler: handler,
                                       position: stream.lastSequence)
        deliver(stream.messages(matching: consumer.pattern, from: start), of: name, to: consumer)
        ordered[id] = consumer
        return id
    }

    private func deliver(_ messages: [InMemoryStream.Message], of stream: String, to consumer: OrderedConsumer) {
        let handler = consumer.handler
        for (index, stored) in messages.enumerated() {
            let message = NATSMessage(subject: stored.subject, payload: stored.payload, headers: stored.headers,
                                      stream: .init(stream: stream, sequence: stored.sequence, pending: UInt64(messages.count - index - 1),
                                                    timestampNanoseconds: stored.storedAt.nanoseconds))
            consumer.loop.execute { handler(message) }
        }
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
