import APNs
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime

/// The bridge between the ingest loop and the broadcast loop.
///
/// Hand-off 1: the ingest loop calls these methods; each one moves the request to the
/// broadcast loop with `execute`, where the ``BroadcastAPNsDispatch`` (push and management) lives.
/// Hand-off 2: the APNs answer comes back to the ingest loop with `execute`, so every reply
/// closure runs on the ingest loop and may touch channel state. Nothing else crosses.
package struct BroadcastDispatcher: Sendable {
    package let apns: any BroadcastAPNsDispatch
    let ingestLoop: EventLoop
    /// Told how long a broadcast waited to reach the broadcast loop.
    let pressure: BroadcastPressure

    package init(apns: any BroadcastAPNsDispatch, ingestLoop: EventLoop, pressure: BroadcastPressure) {
        self.apns = apns
        self.ingestLoop = ingestLoop
        self.pressure = pressure
    }

    /// Publishes `push` on the APNs channel `apnsChannelID` (push pool).
    func broadcast(_ push: ChannelEngine.OutgoingPush, on apnsChannelID: String, fence: (any SideEffectFence)? = nil,
                   reply: @escaping @Sendable (Result<APNsResponse, APNsError>) -> Void) {
        let broadcast = Broadcast(channelID: apnsChannelID, payload: push.payload,
                                  priority: push.priority == .immediate ? .immediate : .powerConsiderate,
                                  expiration: push.expiration == 0 ? .immediately : .at(UnixTime(seconds: push.expiration)))
        let queued = BroadcastPressure.now()
        let pressure = self.pressure
        forward(reply) { apns, done in
            pressure.observeWait(since: queued)
            apns.broadcast(broadcast, fence: fence, completion: done)
        }
    }

    /// Creates an APNs channel (management pool); answers its id. With `fence`, withheld
    /// unless it holds as the request leaves.
    func createChannel(storage: ChannelStorage, fence: (any SideEffectFence)?, reply: @escaping @Sendable (Result<String, APNsError>) -> Void) {
        forward(reply) { apns, done in apns.createChannel(storage: storage, fence: fence, completion: done) }
    }

    /// Deletes an APNs channel (management pool). With `fence`, withheld unless it holds as the
    /// request leaves.
    package func deleteChannel(_ apnsChannelID: String, fence: (any SideEffectFence)?,
                               reply: @escaping @Sendable (Result<APNsResponse, APNsError>) -> Void) {
        forward(reply) { apns, done in apns.deleteChannel(apnsChannelID, fence: fence, completion: done) }
    }

    /// Lists the ids of every channel of the app (management pool).
    package func listChannels(reply: @escaping @Sendable (Result<[String], APNsError>) -> Void) {
        forward(reply) { apns, done in apns.listChannels(completion: done) }
    }

    /// Reads a channel's storage policy (management pool).
    func readChannel(_ apnsChannelID: String, reply: @escaping @Sendable (Result<APNsChannelConfiguration, APNsError>) -> Void) {
        forward(reply) { apns, done in apns.readChannel(apnsChannelID, completion: done) }
    }

    private func forward<T: Sendable>(_ reply: @escaping @Sendable (Result<T, APNsError>) -> Void,
                                      _ call: @escaping @Sendable (any BroadcastAPNsDispatch, @escaping (Result<T, APNsError>) -> Void) -> Void) {
        let apns = self.apns
        let ingestLoop = self.ingestLoop
        apns.loop.execute {
            call(apns) { result in ingestLoop.execute { reply(result) } }
        }
    }

    /// What the engine should make of a failed publish.
    static func pushFailure(for error: APNsError) -> ChannelEngine.PushFailure {
        switch error.disposition {
        case .backOffChannel, .backOffToken: .throttled
        // Withheld: ownership moved before it left. The machine sends it again only once it acts
        // for the channel again, under the fence it then holds.
        case .retryWithBackoff, .retryOnNewConnection, .refreshTokenAndRetry, .withheld: .retryLater
        case .channelGone: .channelGone
        case .drop, .configuration, .tokenDead: .dropped
        }
    }
}
