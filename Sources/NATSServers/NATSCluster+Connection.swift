import NATS
import TouchlineRuntime

extension NATSCluster {
    /// A client connection to every node, as `name`, its events on `loop` dropped. The short
    /// request timeout lets a test see an unanswered publish fail (and be repeated) quickly.
    public func connect(name: String, loop: EventLoop, requestTimeout: Duration = .seconds(2)) throws(NATSError) -> NATSConnection {
        try NATSConnection.connect(NATSSettings(servers: urls, name: name, requestTimeout: requestTimeout), loop: loop, events: { _ in })
    }
}
