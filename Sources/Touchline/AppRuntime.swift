import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlineOperators
import TouchlinePersonal

/// One app's part of a running gateway: everything it has of its own, so that one app's
/// trouble at APNs never delays another's pushes. The gateway holds one per app served, in a
/// ``PerApp`` map by name; the default app's is one of them.
struct AppRuntime: Sendable {
    let name: String
    /// Its APNs pools (broadcasts and management on the broadcast loop, device pushes on the
    /// personal loop) and the provider token they sign with.
    let apns: Gateway.AppDispatch
    /// Its channels' broadcasts and channel management, answered on the ingest loop.
    let broadcast: BroadcastDispatcher
    /// Its personal queue (its jobs, through its device pool), on the personal loop.
    let personal: PersonalDispatcher
    /// The policy of its channels created without one.
    let defaultPolicy: ChannelPolicy
    /// Rotates its APNs key (nil: no key of the configuration's to reload, e.g. the bundled mock's).
    let keyReload: APNsKeyReload?

    /// What the channel service needs of it.
    var channels: ChannelService.AppChannels {
        ChannelService.AppChannels(dispatcher: broadcast, personal: personal, defaultPolicy: defaultPolicy)
    }
}

extension GatewayConfiguration {
    /// Every app the gateway serves, the default app first: the `apns` block's (`apns`: the
    /// bundled mock's settings in development mode) with the gateway's personal queue and
    /// default policy, then ``apps`` with their own over them.
    func servedApps(apns: APNsSettings) -> [App] {
        [App(name: AppChannelID.defaultApp, apns: apns)] + apps
    }
}

extension GatewayConfiguration.App {
    /// The policy of this app's channels created without one.
    func defaultPolicy(in configuration: GatewayConfiguration) -> ChannelPolicy { defaultPolicy ?? configuration.defaultPolicy }
}

extension Gateway {
    /// The log component of `app`'s part named `base` (`personal`, `apns`): the default app's is
    /// `base` itself, another app's `base.app` (as the default app's channel ids are unqualified).
    static func component(_ base: String, of app: String) -> String {
        app == AppChannelID.defaultApp ? base : "\(base).\(app)"
    }
}

extension PerApp<AppRuntime> {
    /// The apps whose APNs key a reload can rotate, by name (none in development mode: the
    /// bundled mock's key is its own).
    var keyReloads: [String: APNsKeyReload] {
        Dictionary(uniqueKeysWithValues: all.compactMap { app in app.keyReload.map { (app.name, $0) } })
    }
}
