import Synchronization
import Touchline
import TouchlineChannels
import TouchlineRuntime
import TouchlineStore

/// The APNs dispatches of a gateway built on ``InMemoryAPNs``: made when the gateway starts
/// (on its broadcast and personal loops, which exist only then), readable here afterwards.
package final class InMemoryAPNsPair: Sendable {
    private let made = Mutex<(broadcast: InMemoryAPNs, personal: InMemoryAPNs)?>(nil)
    private let channelPrefix: String
    private let journal: InMemoryAPNsJournal?

    /// `channelPrefix`, `journal`: see ``InMemoryAPNs/init(loop:channelPrefix:journal:)``.
    package init(channelPrefix: String = "in-memory-channel-", journal: InMemoryAPNsJournal? = nil) {
        self.channelPrefix = channelPrefix
        self.journal = journal
    }

    /// Broadcasts and channel management (nil before the gateway started).
    package var broadcast: InMemoryAPNs? { made.withLock { $0?.broadcast } }
    /// Device pushes (nil before the gateway started).
    package var personal: InMemoryAPNs? { made.withLock { $0?.personal } }

    func make(broadcastLoop: EventLoop, personalLoop: EventLoop) -> Gateway.APNsDispatches {
        let pair = (broadcast: InMemoryAPNs(loop: broadcastLoop, channelPrefix: channelPrefix, journal: journal),
                    personal: InMemoryAPNs(loop: personalLoop, journal: journal))
        made.withLock { $0 = pair }
        return Gateway.APNsDispatches(broadcast: pair.broadcast, personal: pair.personal)
    }
}

extension GatewayStores {
    /// Both stores in memory, each with readers of what it committed.
    package static func inMemory(channels: InMemoryStore, personal: InMemoryStore) -> Self {
        Self(channels: channels, personal: personal,
             channelReader: { channels.openReader() }, personalReader: { personal.openReader() },
             channelOutboxReader: { channels.openReader() }, personalOutboxReader: { personal.openReader() })
    }
}

extension Gateway.Backends {
    /// A gateway on in-memory stores (`channels`, `personal`) and in-memory APNs (`apns`), with
    /// no file and no connection: the configuration's data directory and APNs settings are not
    /// used (configure `apnsMode: .apple` with any settings, or the bundled mock starts).
    package static func inMemory(channels: InMemoryStore, personal: InMemoryStore, apns: InMemoryAPNsPair) -> Self {
        Self(stores: { _ in .inMemory(channels: channels, personal: personal) }, apns: { _ in
            { broadcastLoop, personalLoop in apns.make(broadcastLoop: broadcastLoop, personalLoop: personalLoop) }
        })
    }

    /// A gateway on its own on SQLite in the data directory (as ``standard``) that sends to the
    /// in-memory APNs `apns`.
    package static func sqlite(apns: InMemoryAPNsPair) -> Self {
        Self(stores: standard.stores, apns: { _ in
            { broadcastLoop, personalLoop in apns.make(broadcastLoop: broadcastLoop, personalLoop: personalLoop) }
        })
    }

    /// A gateway on in-memory stores (`channels`, `personal`) that connects to APNs as its
    /// configuration says (the bundled mock in development mode): for tests of the API and the
    /// pushes that want a store they can hold or fail at will, and no file.
    package static func inMemoryStores(channels: InMemoryStore, personal: InMemoryStore) -> Self {
        Self(stores: { _ in .inMemory(channels: channels, personal: personal) }, apns: standard.apns)
    }
}
