import TouchlineCore
import TouchlineRuntime

/// Shadow channels (`"shadow": true` at creation): the whole ingest path (validation, reducer,
/// engine, pacing, budget, the store) runs as for any channel, but APNs is never asked for
/// anything. The gateway stands in for it at the three places a channel meets APNs:
/// - the create: the channel gets the id `shadow:<its id>`, which no request to APNs ever names;
/// - each push: recorded with its payload in the channel's recent pushes (outcome `shadow`,
///   `GET /v1/channels/{id}/stats`) and accepted at once, on the next turn of the loop, as the
///   engine's `pushSucceeded`; it never counts in the ingest-to-APNs latency;
/// - the deletion: confirmed at once.
///
/// Kickoffs cannot start activities into a shadow channel (there is none at APNs), and
/// reconciliation never matches one to an APNs orphan. With `recordFeed` (the default for
/// shadow channels on the embedded store) the trial feed can be replayed later with another policy.
extension ChannelService {
    static let shadowIDPrefix = "shadow:"

    /// The create, answered by the gateway itself.
    func createShadow(_ channel: Channel) {
        loop.execute { [self] in
            guard channels[channel.id] === channel else { return }
            lifecycle(.apnsCreated(Self.shadowIDPrefix + channel.id), of: channel)
        }
    }

    /// A push, recorded and accepted without leaving the gateway.
    func sendShadow(_ push: ChannelEngine.OutgoingPush, on channel: Channel) {
        channel.activity.pushSent(push, at: clock.now(), keepingPayload: true)
        loop.execute { [self] in
            guard channels[channel.id] === channel else { return }
            handle(.pushAnswered(sequence: push.sequence, .acceptedInShadow), of: channel)
        }
    }

    /// The deletion, confirmed at once.
    func deleteShadow(_ channel: Channel) {
        loop.execute { [self] in
            guard !isStopping, channels[channel.id] === channel else { return }
            lifecycle(.deletionConfirmed, of: channel)
        }
    }
}
