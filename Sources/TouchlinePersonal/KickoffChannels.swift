/// Which broadcast channels kickoff starts may still name, on the personal loop.
///
/// A kickoff's start carries `input-push-channel`: the new Live Activity subscribes to that
/// channel. Once the channel has ended (or is being deleted) such a start would open an
/// activity that never updates, or one subscribed to a deleted channel. So ending or deleting a
/// channel **cancels** its kickoffs rather than finishing them or holding the deletion for them:
/// sends in flight are answered, every other target counts as expired (as when a job's
/// `expiration` passes), and nothing more is sent; the APNs deletion waits only until the sends
/// in flight are answered (``closeKickoffs``' `settled`), not for the whole audience.
///
/// The gateway opens a channel here when its APNs create is saved and hands over the open set at
/// start-up, before stored jobs resume; a job naming a channel that is not open is cancelled.
struct KickoffChannels {
    private var open: Set<String> = []
    /// Closures to run once no job naming the channel has a send in flight.
    private var waiting: [String: [@Sendable () -> Void]] = [:]

    init(open: Set<String> = []) { self.open = open }

    func isOpen(_ apnsChannelID: String) -> Bool { open.contains(apnsChannelID) }

    mutating func opened(_ apnsChannelID: String) { open.insert(apnsChannelID) }

    /// Closes the channel; `settled` waits for the in-flight sends of its jobs.
    mutating func closed(_ apnsChannelID: String, settled: @escaping @Sendable () -> Void) {
        open.remove(apnsChannelID)
        waiting[apnsChannelID, default: []].append(settled)
    }

    /// The closures waiting for the channel, now that none of its jobs has a send in flight.
    mutating func takeSettled(_ apnsChannelID: String) -> [@Sendable () -> Void] {
        waiting.removeValue(forKey: apnsChannelID) ?? []
    }

    /// True when someone waits for the channel's sends to settle.
    func isAwaited(_ apnsChannelID: String) -> Bool { waiting[apnsChannelID] != nil }
}
