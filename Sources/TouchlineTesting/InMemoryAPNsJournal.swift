import APNs
import Synchronization

/// The requests several ``InMemoryAPNs`` took, in one order: the gateways of a cluster test in
/// one process each send to an in-memory APNs of their own (on their own loops), and a channel
/// that moves from one gateway to the other keeps one history here, as it does at Apple.
package final class InMemoryAPNsJournal: Sendable {
    private let taken = Mutex<[InMemoryAPNs.Request]>([])

    package init() {}

    /// Every request, in the order the APNs sharing the journal took them.
    package var requests: [InMemoryAPNs.Request] { taken.withLock { $0 } }

    /// The broadcasts, in order.
    package var broadcasts: [Broadcast] {
        requests.compactMap { if case .broadcast(let broadcast) = $0 { broadcast } else { nil } }
    }

    /// The device pushes, in order.
    package var pushes: [LiveActivityPush] {
        requests.compactMap { if case .push(let push) = $0 { push } else { nil } }
    }

    func record(_ request: InMemoryAPNs.Request) { taken.withLock { $0.append(request) } }
}
