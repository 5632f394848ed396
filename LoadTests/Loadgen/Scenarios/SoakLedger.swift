import LoadKit
import Synchronization

/// What the soak's clients know, as a provider would: for each channel the events it sent and
/// those acknowledged, the APNs channel id the gateway gave it, and how far its life went (asked
/// for and acknowledged: created, ended, deleted); for each personal job its audience and what
/// became of its post. Written by the load threads, read by the checks. Thread-safe.
final class SoakLedger: Sendable {
    /// A channel's life as the provider asked for it; a step is only taken once acknowledged,
    /// and the `...Asked` states say a request went out whose answer has not come.
    enum Life: Sendable, Equatable {
        case createAsked, active, endAsked, ended, deleteAsked, deleted
    }

    struct Channel: Sendable {
        /// Made at setup (events flow to it the whole run) or by the channel churn.
        var churned: Bool
        var events = SentEvents()
        var life: Life
        /// The first APNs channel id the gateway gave it.
        var apnsID: String?
    }

    /// A personal job: one topic, its audience, and its post.
    struct Job: Sendable {
        enum Post: Sendable, Equatable {
            /// Answered 202 with this id.
            case stored(id: String)
            /// The answer was lost to a kill: stored or not, nobody knows.
            case lost
        }

        var number: Int
        var topic: String
        var viaKickoff: Bool
        var audience: [String]
        var unregistered: Set<String>
        var post: Post
    }

    private struct State {
        var channels: [String: Channel] = [:]
        var jobs: [Job] = []
        /// Each time a channel showed another APNs id than the one it was given first.
        var replacedAPNsIDs: [String] = []
    }

    private let state = Mutex(State())

    func add(_ id: String, churned: Bool, life: Life) {
        state.withLock { $0.channels[id] = Channel(churned: churned, life: life) }
    }

    func setLife(_ id: String, _ life: Life) {
        state.withLock { $0.channels[id]?.life = life }
    }

    /// Called before the events up to `seq` are written.
    func sending(_ id: String, upTo seq: Int64) {
        state.withLock { state in
            if let sent = state.channels[id]?.events.sent, sent < seq { state.channels[id]?.events.sent = seq }
        }
    }

    /// A 202 covered the events up to `seq`.
    func acknowledged(_ id: String, upTo seq: Int64) {
        state.withLock { state in
            if let acknowledged = state.channels[id]?.events.acknowledged, acknowledged < seq { state.channels[id]?.events.acknowledged = seq }
        }
    }

    /// The gateway showed `apnsID` for the channel (in a create's answer or a `GET`): the first
    /// one is kept, a different one later is recorded as the channel created twice.
    func saw(_ id: String, apnsID: String) {
        state.withLock { state in
            guard let known = state.channels[id]?.apnsID else { return state.channels[id]?.apnsID = apnsID }
            if known != apnsID { state.replacedAPNsIDs.append("\(id): \(known) then \(apnsID)") }
        }
    }

    func add(_ job: Job) {
        state.withLock { $0.jobs.append(job) }
    }

    var channels: [String: Channel] { state.withLock { $0.channels } }
    var jobs: [Job] { state.withLock { $0.jobs } }
    var replacedAPNsIDs: [String] { state.withLock { $0.replacedAPNsIDs } }
}
