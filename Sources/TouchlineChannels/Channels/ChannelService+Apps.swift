import TouchlineCore
import TouchlinePersonal

/// The apps a gateway's channels belong to (``AppChannelID``): each app's channels go to APNs
/// through its own dispatcher (its provider token and connections), run their kickoffs in its
/// personal queue, and take its default policy.
extension ChannelService {
    /// What the channels of an app need: where their broadcasts and channel management go, where
    /// their kickoffs run, and the policy of those created without one.
    package struct AppChannels: Sendable {
        package let dispatcher: BroadcastDispatcher
        package let personal: PersonalDispatcher
        let defaultPolicy: ChannelPolicy

        package init(dispatcher: BroadcastDispatcher, personal: PersonalDispatcher, defaultPolicy: ChannelPolicy) {
            self.dispatcher = dispatcher
            self.personal = personal
            self.defaultPolicy = defaultPolicy
        }
    }

    /// Every app served, `default` included.
    package var servedApps: Set<String> { Set(apps.names) }

    /// Whether `app` is configured here.
    func serves(app: String) -> Bool { apps.contains(app) }

    /// The dispatcher of `app`'s channels. Only channels of served apps are loaded or created,
    /// so another app never reaches the `default` app's connections.
    package func dispatcher(ofApp app: String) -> BroadcastDispatcher { apps[app].dispatcher }

    /// The dispatcher of `channel`'s app.
    func dispatcher(of channel: Channel) -> BroadcastDispatcher { dispatcher(ofApp: channel.app) }

    /// The personal queue of `channel`'s app: its kickoffs run there.
    func personal(of channel: Channel) -> PersonalDispatcher { apps[channel.app].personal }

    /// The policy of `app`'s channels created without one.
    func defaultPolicy(ofApp app: String) -> ChannelPolicy { apps[app].defaultPolicy }
}
