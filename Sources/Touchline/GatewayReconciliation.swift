import APNs
import TouchlineCore
import TouchlineStore

/// Creates whose answer was lost (the process died between asking APNs and saving the id).
///
/// Such a channel is still `creating` in the store, and Apple may hold a channel for it that no
/// record accounts for. At start-up the gateway lists the app's channels, reads the storage
/// policy of each unaccounted one, and adopts it for a `creating` channel with the same policy,
/// so no channel leaks toward Apple's limit. This assumes the app's channels in this
/// environment belong to this gateway alone. A `creating` channel left without a match is
/// created afresh by the next `POST /v1/channels` with its id.
extension GatewayService {
    func reconcileLostCreates() {
        guard channels.values.contains(where: { $0.apnsChannelID == nil }) else { return }
        dispatcher.listChannels { [self] result in
            switch result {
            case .failure(let error):
                print("touchline: cannot list APNs channels to reconcile lost creates: \(error)")
            case .success(let listed):
                let accounted = Set(channels.values.compactMap(\.apnsChannelID))
                for orphan in listed where !accounted.contains(orphan) {
                    dispatcher.readChannel(orphan) { [self] read in
                        guard case .success(let configuration) = read else { return }
                        adopt(orphan, storage: configuration.storagePolicy)
                    }
                }
            }
        }
    }

    private func adopt(_ apnsID: String, storage: ChannelStorage) {
        let candidates = channels.values.filter { $0.apnsChannelID == nil && $0.createWaiters.isEmpty && !$0.isAdopting && $0.storage == storage }
        guard let channel = candidates.min(by: { $0.createdAt < $1.createdAt }) else { return }
        channel.isAdopting = true
        store.submit(WriteBatch([.channelCreated(channelID: channel.id, apnsChannelID: apnsID, at: clock.now())])) { [self] result in
            loop.execute { [self] in
                channel.isAdopting = false
                guard channel.apnsChannelID == nil else { return }
                if case .success = result {
                    print("touchline: channel \(channel.id) adopted APNs channel \(apnsID) from a create whose answer was lost")
                    markCreated(channel, apnsID: apnsID)
                } else if !channel.createWaiters.isEmpty {
                    callCreate(channel)
                }
            }
        }
    }
}
