import TouchlineAccess
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore

/// What operators watch: `GET /metrics` (Prometheus text), `GET /healthz` (the process serves),
/// `GET /readyz` (the stores take writes and every APNs pool is connected, or making its first
/// connection without a failure), `GET /v1/stats` and `GET /v1/channels/{id}/stats` (JSON).
///
/// `/healthz` and `/readyz` never need a key (probes and load balancers carry none); `/metrics`
/// needs one only with `metrics.requireKey`. The figures are the channel service's and the
/// other loops' (gathered through ``gatherLoopSnapshots(_:)``), plus the personal jobs found
/// broken at start.
///
/// Owns what only operators read: the broadcast loop's APNs counters, the `/metrics` settings,
/// the keys' rate-limit refusals (the admission hook takes from the same buckets) and the
/// personal store's health. On the ingest loop (`@unchecked Sendable` only so route closures
/// and loop jobs can capture it).
package final class OperatorsAPI: APIFeature, @unchecked Sendable {
    let service: ChannelService
    let intake: PersonalJobIntake
    /// Tokens, personal jobs and dead letters: its health and queue are shown beside the channels'.
    let personalStore: any PersonalStoreWriter
    /// Apple's servers or the bundled mock (development mode): shown wherever operators look.
    let apnsMode: GatewayConfiguration.APNsMode
    /// `/metrics` exposure settings.
    let metricsSettings: MetricsSettings
    /// The broadcast loop's APNs counters (read there, through `execute`): each app's, in the
    /// order of ``PerApp/names`` (the default app first).
    let apnsMetrics: [APNsMetrics]
    /// The API keys' request buckets, taken by the admission hook (on this loop: the HTTP server's).
    package let requestLimits: Admission.RequestLimits
    /// What operators see of the backend (a cluster member's connection, partitions, registry).
    let backend: any BackendOperatorView
    /// The provider API's server, on this loop, set once it listens (its connections and bodies
    /// are in `/metrics`); weak, as the server's handler holds the routes and so this.
    package weak var httpServer: HTTPServer?

    package init(service: ChannelService, intake: PersonalJobIntake, personalStore: any PersonalStoreWriter, backend: any BackendOperatorView,
         configuration: GatewayConfiguration, clock: any WallClock) {
        self.backend = backend
        self.service = service
        self.intake = intake
        self.personalStore = personalStore
        apnsMode = configuration.apnsMode
        metricsSettings = configuration.metrics
        apnsMetrics = service.apps.entries.map { name, app in
            APNsMetrics(app: name, apns: app.dispatcher.apns, pushPool: "broadcast", kind: .broadcast, managementPool: "management",
                        credentialsRejected: service.webhooks?.credentialsReporter(app: name))
        }
        requestLimits = Admission.RequestLimits(keys: configuration.apiKeys, providerDefault: configuration.providerRateLimit, clock: clock)
    }

    // The channel service's state the figures are built from (all on the ingest loop).
    var channels: [String: Channel] { service.channels }
    var clock: any WallClock { service.clock }
    var loop: EventLoop { service.loop }
    var store: any ChannelStoreWriter { service.store }

    package func addRoutes(to router: inout APIRouter) {
        addStatsRoutes(to: &router)
        router.add(.get, "/metrics", scope: metricsSettings.requireKey ? .anyKey : .open) { [self] call throws(HTTPError) in
            gatherLoopSnapshots { [self] loops in
                let respond: @Sendable ([MetricFamily]) -> Void = { [self] webhookFamilies in
                    let text = PrometheusTextEncoder.encode(metricFamilies(loops) + storeMetricFamilies(brokenJobs: intake.brokenJobs.count)
                                                           + httpMetricFamilies() + backend.metricFamilies() + recordingMetricFamilies()
                                                           + keyLimitMetricFamilies() + generationStartMetricFamilies(loops) + webhookFamilies)
                    call.respond(HTTPResponse(status: 200, headers: [("Content-Type", PrometheusTextEncoder.contentType)],
                                              body: Array(text.utf8)))
                }
                guard let webhooks = service.webhooks else { return respond([]) }
                webhooks.snapshot { [service] snapshot in service.loop.execute { respond(snapshot.metricFamilies) } }
            }
        }
        router.add(.get, "/healthz", scope: .open) { call throws(HTTPError) in
            call.respond(.json(status: 200, ["status": "alive"]))
        }
        router.add(.get, "/readyz", scope: .open) { [self] call throws(HTTPError) in
            gatherLoopSnapshots { [self] loops in
                let readiness = readinessJSON(loops)
                call.respond(.json(status: readiness.ready ? 200 : 503, readiness.body))
            }
        }
    }

    func addStatsRoutes(to router: inout APIRouter) {
        router.add(.get, "/v1/stats", scope: .anyKey) { [self] call throws(HTTPError) in
            let key = try call.caller.requiredKey()
            gatherLoopSnapshots { [self] loops in
                call.respond(.json(status: 200, statsJSON(visibleTo: key, loops: loops)))
            }
        }
        for base in APIAccess.appRouteBases {
            router.add(.get, "\(base)/channels/{id}/stats", scope: .channel(parameter: "id")) { [self] call throws(HTTPError) in
                call.respond(.json(status: 200, try service.channel(call).statsJSON(now: service.clock.now())))
            }
        }
    }
}
