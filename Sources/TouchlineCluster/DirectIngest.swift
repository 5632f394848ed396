import NATS
import TouchlineAccess
import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// Events providers publish straight to the cluster from their own NATS clients, to
/// `<prefix>.in.<channel>` (a channel id's `.` written `~`), with the same JSON as the body of
/// `POST /v1/channels/{id}/events`. The servers' subject mapping puts each on its partition's
/// subject of the ingest stream (`<prefix>.ingest.<partition>.<channel>`, deploy/nats/), and the
/// partition's owner takes them, one at a time and in order, exactly as that route would: what
/// it acknowledges (202) is stored; what it refuses (a 4xx) goes with its error to
/// `<prefix>.rejected.<channel>`, never dropped; what it cannot take now (503) is delivered
/// again a second later (the events' `seq` makes that harmless).
///
/// Confined to the ingest loop, like ``ClusterNode``, whose partitions it serves.
final class DirectIngest: @unchecked Sendable {
    /// How soon a message that could not be taken now is delivered again.
    static let redeliveryDelay: Duration = .seconds(1)

    let prefix: String
    private let jetStream: any JetStreamClient
    private let connection: any MessagingClient
    private let loop: EventLoop
    private let log: GatewayLog

    init(prefix: String, jetStream: any JetStreamClient, connection: any MessagingClient, loop: EventLoop, log: GatewayLog) {
        self.prefix = prefix
        self.jetStream = jetStream
        self.connection = connection
        self.loop = loop
        self.log = log
    }

    var ingestStream: String { prefix.uppercased() + "_INGEST" }
    var rejectedStream: String { prefix.uppercased() + "_REJECTED" }

    /// The server mapping deployments configure: what providers publish to, and where it lands.
    static func mapping(prefix: String, partitions: Int) -> (from: String, to: String) {
        ("\(prefix).in.*", "\(prefix).ingest.{{partition(\(partitions),1)}}.{{wildcard(1)}}")
    }

    /// Creates the ingest stream (each message removed once its owner has taken it) and the
    /// stream of refused events (kept 7 days, the oldest dropped first when full). A full ingest
    /// stream refuses publishes: the provider's publish fails, nothing is dropped. Blocking:
    /// while the gateway starts.
    func ensureStreams(replicas: Int, ingestBytes: Int?, rejectedBytes: Int?) throws(NATSError) {
        try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureBoundedStream(.init(name: ingestStream, subjects: ["\(prefix).ingest.>"], replicas: replicas, retention: .workQueue,
                                                    maximumBytes: ingestBytes))
        }
        try JetStream.retryingWhileForming { () throws(NATSError) in
            try jetStream.ensureStream(.init(name: rejectedStream, subjects: ["\(prefix).rejected.>"], replicas: replicas,
                                             maximumAge: .seconds(7 * 86_400), maximumBytes: rejectedBytes, whenFull: .dropOldest))
        }
    }

    /// The partition's consumer: its events one at a time, in order, to whichever gateway serves it.
    func consumer(of partition: Int) -> JetStream.PushConsumerSettings {
        .init(stream: ingestStream, name: "ingest-\(partition)", filterSubject: "\(prefix).ingest.\(partition).>",
              deliverSubject: "\(prefix).deliver.ingest.\(partition)", group: "owners")
    }

    /// Creates the partition's consumer if needed (blocking: off the loops).
    func prepare(partition: Int) throws(NATSError) {
        try JetStream.retryingWhileForming { () throws(NATSError) in try jetStream.ensurePushConsumer(consumer(of: partition)) }
    }

    /// Starts taking the partition's events (on the loop) into `service`'s channels, while
    /// `serves` says this gateway still serves the partition.
    func subscribe(partition: Int, service: ChannelService, serves: @escaping @Sendable (Int) -> Bool) throws(NATSError) -> any MessageSubscription {
        let settings = consumer(of: partition)
        return try connection.subscribe(to: settings.deliverSubject, queue: settings.group, loop: loop) { [weak self] message in
            self?.take(message, partition: partition, service: service, serves: serves)
        }
    }

    /// Takes one event message through the channel service's events entry, as the route would
    /// (the NATS account's permission to publish stands for the API key).
    private func take(_ message: NATSMessage, partition: Int, service: ChannelService, serves: (Int) -> Bool) {
        guard serves(partition) else { return jetStream.deliverAgain(message, after: Self.redeliveryDelay) }
        let token = message.subject.split(separator: ".").last.map(String.init) ?? ""
        // A starting gateway's probe of the servers' mapping (ClusterMappingCheck): no event.
        if token.hasPrefix(PartitionMappingProbe.tokenPrefix) { return jetStream.acknowledge(message) }
        // As the route reads its path segment: `%XX` decoded (a malformed escape names no channel).
        let spelled = token.replacingOccurrences(of: "~", with: ".")
        let channelID = HTTPRequestTarget.percentDecoded(spelled.utf8) ?? spelled
        service.postEvents(to: channelID, app: AppChannelID.defaultApp, body: message.payload, loop: loop) { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .stored: jetStream.acknowledge(message)
            case .unavailable: jetStream.deliverAgain(message, after: Self.redeliveryDelay)
            case .refused(let response): reject(message, channelID: channelID, token: token, response: response)
            }
        }
    }

    /// Publishes the refused event with its error to `<prefix>.rejected.<channel>`, then lets
    /// the ingest stream drop it; if that publish fails, the event is delivered again later.
    private func reject(_ message: NATSMessage, channelID: String, token: String, response: HTTPResponse) {
        let answer = (try? JSONParser.parse(response.body)) ?? .object([])
        let event = (try? JSONParser.parse(message.payload)) ?? .string(String(decoding: message.payload, as: UTF8.self))
        let record = JSONValue.object([
            .init("channel", .string(channelID)),
            .init("status", .integer(Int64(response.status))),
            .init("error", answer[member: "error"] ?? .string("refused")),
            .init("message", answer[member: "message"] ?? .string(String(decoding: response.body, as: UTF8.self))),
            .init("event", event),
        ])
        jetStream.publish(record.encoded, to: "\(prefix).rejected.\(token)", loop: loop) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success: jetStream.acknowledge(message)
            case .failure(let error):
                log.warning("recording a refused event of channel \(channelID) failed; it is taken again later", error: error)
                jetStream.deliverAgain(message, after: Self.redeliveryDelay)
            }
        }
    }
}
