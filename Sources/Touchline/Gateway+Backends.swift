import APNs
import Synchronization
import TouchlineCluster
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

extension Gateway {
    /// What a started gateway stores into and sends through. The gateway depends only on the
    /// protocols (``ChannelStoreWriter``, ``PersonalStoreWriter``, the readers, the APNs
    /// dispatches); ``standard`` opens the SQLite files in the data directory and connects to
    /// APNs (or the bundled mock), and tests inject other implementations.
    package struct Backends: Sendable {
        /// Opens both stores (at start, before the loops).
        package var stores: @Sendable (_ configuration: GatewayConfiguration) throws -> GatewayStores
        /// Prepares the APNs side (at start, before the stores: credentials are checked first) and
        /// answers how to connect it once the broadcast and personal loops run.
        package var apns: @Sendable (_ context: APNsContext) throws -> APNsConnector
        /// How a gateway of the `jetstream` backend reaches its cluster (the NATS servers of its
        /// settings by default).
        package var nats: NATSConnector

        package init(stores: @escaping @Sendable (GatewayConfiguration) throws -> GatewayStores,
                     apns: @escaping @Sendable (APNsContext) throws -> APNsConnector, nats: @escaping NATSConnector = ClusterBackend.natsServers) {
            self.stores = stores
            self.apns = apns
            self.nats = nats
        }

        /// SQLite in the data directory, and APNs connections.
        package static let standard = Backends(stores: GatewayStores.sqlite, apns: APNsContext.connections)

        /// The backend the configuration asks for: a member of the JetStream cluster `store`
        /// names (reached through ``nats``), or a gateway on its own on ``stores``. The one
        /// place that tells the two apart (``GatewayBackend``).
        func backend(for configuration: GatewayConfiguration) -> any GatewayBackend {
            if let settings = configuration.store.jetStream { return ClusterBackend(settings: settings, nats: nats) }
            return OneGatewayBackend(openStores: stores)
        }
    }

    /// Connects the APNs dispatches on the loops that will own them.
    package typealias APNsConnector = @Sendable (_ broadcastLoop: EventLoop, _ personalLoop: EventLoop) throws -> APNsDispatches

    /// Every app's dispatches, by app name (the default app's among them).
    package struct APNsDispatches: Sendable {
        package var apps: [String: AppDispatch]

        package init(apps: [String: AppDispatch]) {
            self.apps = apps
        }

        /// The default app alone, with no provider token (no key to reload): in-memory APNs.
        package init(broadcast: any BroadcastAPNsDispatch, personal: any PersonalAPNsDispatch) {
            apps = [AppChannelID.defaultApp: AppDispatch(broadcast: broadcast, personal: personal, providerToken: nil)]
        }
    }

    /// An app's broadcasts and channel management (on the broadcast loop) and device pushes (on
    /// the personal loop), in pools of its own, with the provider token they sign with.
    package struct AppDispatch: Sendable {
        package var broadcast: any BroadcastAPNsDispatch
        package var personal: any PersonalAPNsDispatch
        /// The provider token both sign with, whose key a reload replaces (nil: no APNs key).
        /// Each loop's connections move to a new token by themselves (`APNsConnectionToken`).
        package var providerToken: ProviderToken?

        package init(broadcast: any BroadcastAPNsDispatch, personal: any PersonalAPNsDispatch, providerToken: ProviderToken?) {
            self.broadcast = broadcast
            self.personal = personal
            self.providerToken = providerToken
        }
    }

    /// What the APNs side is prepared from.
    package struct APNsContext: Sendable {
        package var configuration: GatewayConfiguration
        package var settings: GatewayConfiguration.APNsSettings
        package var clock: any WallClock
        package var log: GatewayLog

        package init(configuration: GatewayConfiguration, settings: GatewayConfiguration.APNsSettings, clock: any WallClock,
                     log: GatewayLog) {
            self.configuration = configuration
            self.settings = settings
            self.clock = clock
            self.log = log
        }

        /// Each app's provider token (checked now, the default app's first), then its two
        /// ``APNsConnections`` sharing it: broadcasts and management on the broadcast loop,
        /// device pushes on the personal loop. Every app has its own: one app's queue, 429s or
        /// dead connection never hold another's requests.
        static func connections(_ context: APNsContext) throws -> APNsConnector {
            let margin = context.configuration.apnsTokenRenewalMargin
            let personalQueue = context.configuration.personalQueue
            let apps = try context.configuration.servedApps(apns: context.settings).map { app in
                var apns = Self.client(app.apns)
                apns.tokenRenewalMargin = margin
                return (app, try ProviderToken(configuration: apns, clock: context.clock, log: context.log.named(Gateway.component("apns", of: app.name))))
            }
            return { broadcastLoop, personalLoop in
                var dispatches: [String: AppDispatch] = [:]
                for (app, token) in apps {
                    dispatches[app.name] = try Self.dispatch(app.apns, token: token, personalConnections: app.personalQueue.applied(to: personalQueue).connections,
                                                             broadcastLoop: broadcastLoop, personalLoop: personalLoop)
                }
                return APNsDispatches(apps: dispatches)
            }
        }

        /// One app's pools: broadcasts and management on the broadcast loop, device pushes on the
        /// personal loop, all signing with `token`.
        private static func dispatch(_ settings: GatewayConfiguration.APNsSettings, token: ProviderToken, personalConnections: Int,
                                     broadcastLoop: EventLoop, personalLoop: EventLoop) throws -> AppDispatch {
            let apns = Self.client(settings)
            let options = APNsConnections.Options(tls: TLSConfiguration(caFile: settings.caFile), pools: [.broadcast, .management])
            let connections = try APNsConnections(configuration: apns, providerToken: token, options: options, loop: broadcastLoop)
            var personalOptions = options
            personalOptions.pools = [.device]
            personalOptions.pushConnections = personalConnections
            let personal = try APNsConnections(configuration: apns, providerToken: token, options: personalOptions, loop: personalLoop)
            return AppDispatch(broadcast: APNsConnectionsDispatch(connections), personal: APNsConnectionsDispatch(personal),
                               providerToken: token)
        }

        /// The APNs client's settings of an app.
        private static func client(_ settings: GatewayConfiguration.APNsSettings) -> APNsConfiguration {
            APNsConfiguration(keyPath: settings.keyPath, keyID: settings.keyID, teamID: settings.teamID,
                              bundleID: settings.bundleID, environment: settings.environment, broadcastHost: settings.broadcastHost)
        }
    }
}
