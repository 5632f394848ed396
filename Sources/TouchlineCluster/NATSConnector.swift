import NATS
import TouchlineConfiguration
import TouchlineJetStream
import TouchlineRuntime

/// Connects a cluster gateway to its cluster: JetStream on a connection whose events go to
/// `events` on `loop` (at start, blocking: never on a loop).
package typealias NATSConnector = @Sendable (_ settings: JetStreamSettings, _ loop: EventLoop,
                                             _ events: @escaping @Sendable (NATSConnection.Event) -> Void) throws(NATSError) -> any JetStreamClient

extension ClusterBackend {
    /// The NATS servers the settings name.
    /// A server older than the oldest supported release is refused before connecting.
    package static let natsServers: NATSConnector = { settings, loop, events throws(NATSError) in
        let nats = settings.natsSettings
        try NATSServerVersion.requireSupported(nats.servers, timeout: nats.connectTimeout)
        return try JetStream(try NATSConnection.connect(nats, loop: loop, events: events))
    }
}
