/// What a write reads and changes of the tables, so that a store can check it on a copy of
/// those rows alone: a copy of the whole tables costs as much as every channel in them, on
/// every write (the JetStream backend checks each batch before logging it).
public struct ChannelScope: Sendable, Equatable {
    /// The channels the write names.
    public var channelIDs: Set<String> = []
    /// The APNs channel ids the write gives a channel: the channel holding one now is read by
    /// the uniqueness check.
    public var apnsChannelIDs: Set<String> = []

    public init(channelIDs: Set<String> = [], apnsChannelIDs: Set<String> = []) {
        self.channelIDs = channelIDs
        self.apnsChannelIDs = apnsChannelIDs
    }

    /// What `operations` read and change. Webhook operations read no channel and never fail a
    /// batch, so they add nothing.
    public init(_ operations: [StoreOperation]) {
        for operation in operations {
            switch operation {
            case .createChannel(let record):
                channelIDs.insert(record.id)
                if let apnsID = record.apnsChannelID { apnsChannelIDs.insert(apnsID) }
            case .channelCreated(let id, let apnsID, _):
                channelIDs.insert(id)
                apnsChannelIDs.insert(apnsID)
            case .updateState(let update):
                channelIDs.insert(update.channelID)
            case .markStatus(let id, _, _, _), .deleteChannel(let id), .truncateEvents(let id, _):
                channelIDs.insert(id)
            case .appendEvents(let events), .recordEvents(let events):
                // Mostly one channel's: each run of one id is inserted (and hashed) once.
                var previous: String?
                for event in events where event.channelID != previous {
                    previous = event.channelID
                    channelIDs.insert(event.channelID)
                }
            case .webhook:
                break
            }
        }
    }
}

extension ChannelTables {
    /// The rows `scope` reads: its channels with their events, and the channels holding its APNs
    /// ids. A write within `scope` succeeds or fails on this copy exactly as on the whole tables,
    /// and leaves the scope's channels as it would there; it costs what the scope holds, not what
    /// the tables hold. (Its outbox is empty: outbox operations never fail a write.)
    public func scoped(to scope: ChannelScope) -> ChannelTables {
        var scoped = ChannelTables()
        let holders = scope.apnsChannelIDs.compactMap { channelIDsByAPNsID[$0] }
        for id in scope.channelIDs.union(holders) {
            guard let record = channels[id] else { continue }
            scoped.store(record)
            if let logged = events[id] { scoped.events[id] = logged }
        }
        scoped.lastOutboxID = lastOutboxID
        return scoped
    }
}
