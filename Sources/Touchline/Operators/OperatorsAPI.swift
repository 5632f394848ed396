import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// What operators watch: `GET /metrics` (Prometheus text), `GET /healthz` (the process serves),
/// `GET /readyz` (the stores take writes and every APNs pool is connected, or making its first
/// connection without a failure), `GET /v1/stats` and `GET /v1/channels/{id}/stats` (JSON).
///
/// `/healthz` and `/readyz` never need a key (probes and load balancers carry none); `/metrics`
/// needs one only with `metrics.requireKey`. The figures are the channel service's and the
/// other loops' (gathered through ``ChannelService/gatherLoopSnapshots(_:)``), plus the
/// personal jobs found broken at start.
struct OperatorsAPI: APIFeature {
    let service: ChannelService
    let intake: PersonalJobIntake

    func addRoutes(to router: inout APIRouter) {
        addStatsRoutes(to: &router)
        router.add(.get, "/metrics", scope: service.metricsSettings.requireKey ? .anyKey : .open) { call throws(HTTPError) in
            service.gatherLoopSnapshots { loops in
                let respond: @Sendable ([MetricFamily]) -> Void = { webhookFamilies in
                    let text = PrometheusTextEncoder.encode(service.metricFamilies(loops) + service.storeMetricFamilies(brokenJobs: intake.brokenJobs.count)
                                                           + webhookFamilies)
                    call.respond(HTTPResponse(status: 200, headers: [("Content-Type", PrometheusTextEncoder.contentType)],
                                              body: Array(text.utf8)))
                }
                guard let webhooks = service.webhooks else { return respond([]) }
                webhooks.snapshot { snapshot in service.loop.execute { respond(service.webhookMetricFamilies(snapshot)) } }
            }
        }
        router.add(.get, "/healthz", scope: .open) { call throws(HTTPError) in
            call.respond(.json(status: 200, ["status": "alive"]))
        }
        router.add(.get, "/readyz", scope: .open) { call throws(HTTPError) in
            service.gatherLoopSnapshots { loops in
                let readiness = service.readinessJSON(loops)
                call.respond(.json(status: readiness.ready ? 200 : 503, readiness.body))
            }
        }
    }

    func addStatsRoutes(to router: inout APIRouter) {
        router.add(.get, "/v1/stats", scope: .anyKey) { call throws(HTTPError) in
            let key = try call.caller.requiredKey()
            service.gatherLoopSnapshots { loops in
                call.respond(.json(status: 200, service.statsJSON(visibleTo: key, loops: loops)))
            }
        }
        router.add(.get, "/v1/channels/{id}/stats", scope: .channel(parameter: "id")) { call throws(HTTPError) in
            call.respond(.json(status: 200, try service.channel(call).statsJSON(now: service.clock.now())))
        }
    }
}
