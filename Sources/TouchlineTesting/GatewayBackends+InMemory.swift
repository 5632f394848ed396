import Synchronization
import Touchline
import TouchlineRuntime
import TouchlineStore

/// The APNs dispatches of a gateway built on ``InMemoryAPNs``: made when the gateway starts
/// (on its broadcast and personal loops, which exist only then), readable here afterwards.
package final class InMemoryAPNsPair: Sendable {
    private let made = Mutex<(broadcast: InMemoryAPNs, personal: InMemoryAPNs)?>(nil)

    package init() {}

    /// Broadcasts and channel management (nil before the gateway started).
    package var broadcast: InMemoryAPNs? { made.withLock { $0?.broadcast } }
    /// Device pushes (nil before the gateway started).
    package var personal: InMemoryAPNs? { made.withLock { $0?.personal } }

    fileprivate func make(broadcastLoop: EventLoop, personalLoop: EventLoop) -> Gateway.APNsDispatches {
        let pair = (broadcast: InMemoryAPNs(loop: broadcastLoop), personal: InMemoryAPNs(loop: personalLoop))
        made.withLock { $0 = pair }
        return Gateway.APNsDispatches(broadcast: pair.broadcast, personal: pair.personal)
    }
}

extension Gateway.Backends {
    /// A gateway on in-memory stores (`channels`, `personal`) and in-memory APNs (`apns`), with
    /// no file and no connection: the configuration's data directory and APNs settings are not
    /// used (configure `apnsMode: .apple` with any settings, or the bundled mock starts).
    package static func inMemory(channels: InMemoryStore, personal: InMemoryStore, apns: InMemoryAPNsPair) -> Self {
        Self(stores: { _ in
            Gateway.Stores(channels: channels, personal: personal,
                           channelReader: { channels.openReader() }, personalReader: { personal.openReader() },
                           channelOutboxReader: { channels.openReader() }, personalOutboxReader: { personal.openReader() })
        }, apns: { _ in
            { broadcastLoop, personalLoop in apns.make(broadcastLoop: broadcastLoop, personalLoop: personalLoop) }
        })
    }
}
