import NATS
import TouchlineRuntime
import TouchlineTesting

/// One client of either backend on a loop of its own, with async helpers.
final class BackendClient: Sendable {
    let loop: EventLoop
    let jetStream: any JetStreamClient

    init(_ cluster: TestNATSCluster, name: String = "test") throws {
        loop = EventLoop.start(name: "contract-\(name)")
        jetStream = try cluster.connect(name: name, loop: loop)
    }

    deinit { loop.stop() }

    func publish(_ text: String, to subject: String, headers: [String: String] = [:],
                 conditions: JetStream.PublishConditions = .init()) async -> Result<JetStream.Acknowledgement, NATSError> {
        await withCheckedContinuation { done in
            jetStream.publish(Array(text.utf8), to: subject, headers: headers, conditions: conditions, loop: loop) { done.resume(returning: $0) }
        }
    }

    func collect(_ count: Int, from subject: String, start: JetStream.DeliveryStart) async throws -> [NATSMessage] {
        try await jetStream.collect(count, from: subject, start: start, on: loop)
    }

    /// The message id of `stream`'s message at `sequence`, asked on the loop.
    func messageID(in stream: String, at sequence: UInt64) async -> Result<String?, NATSError> {
        guard let requests = try? loop.sync({ [jetStream, loop] in try NATSRequests(connection: jetStream.messaging, loop: loop) }) else {
            return .failure(.connectionClosed(operation: "read message \(sequence) of \(stream)"))
        }
        return await withCheckedContinuation { done in
            loop.execute { requests.messageID(in: stream, at: sequence, timeout: .seconds(5)) { result in withExtendedLifetime(requests) { done.resume(returning: result) } } }
        }
    }

    /// A purge sent on the loop, its answer awaited.
    func purge(_ requests: NATSRequests,
               _ send: @escaping @Sendable (NATSRequests, @escaping (Result<UInt64, NATSError>) -> Void) -> Void) async -> Result<UInt64, NATSError> {
        await withCheckedContinuation { done in
            loop.execute { send(requests) { done.resume(returning: $0) } }
        }
    }
}

extension NATSMessage {
    var text: String { String(decoding: payload, as: UTF8.self) }
}

extension JetStreamClient {
    /// The first `count` messages on `subject` from `start`, delivered in order on `loop`
    /// (each within 10 s).
    func collect(_ count: Int, from subject: String, start: JetStream.DeliveryStart, on loop: EventLoop) async throws -> [NATSMessage] {
        let received = Mailbox<NATSMessage>()
        let subscription = try subscribeOrdered(to: subject, from: start, loop: loop) { received.put($0) }
        defer { subscription.cancel() }
        var messages: [NATSMessage] = []
        for _ in 0..<count { messages.append(try await received.take(timeout: .seconds(10))) }
        return messages
    }
}
