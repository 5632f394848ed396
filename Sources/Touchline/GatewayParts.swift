import APNsMock
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineWebhooks

// The gateway's parts as ``GatewayService``s, in the order the gateway starts them (it shuts
// them down in the reverse order): the bundled mock, the loops, the backend's (a cluster member's node, the stores),
// the answers in flight (APNs pools, personal queues, webhook delivery), then the channels and
// the HTTP server (``GatewayFront``).

/// The mock APNs of development mode: started before anything connects to it, stopped last.
struct BundledMockService: GatewayService {
    let server: MockAPNsServer
    /// The APNs settings that point at it.
    let settings: GatewayConfiguration.APNsSettings

    /// Starts the mock (its files in the data directory).
    init(dataDirectory: String) throws {
        (server, settings) = try BundledMockAPNs.start(dataDirectory: dataDirectory)
    }

    func close() { server.stop() }
}

/// What waits for answers from outside: every app's APNs pools and personal queue, and the
/// webhook delivery. They are given their grace together (a push and a webhook attempt in
/// flight wait at the same time), then one turn of the ingest loop runs the answers delivered
/// meanwhile (queueing their saves) before the stores close.
struct AnswersInFlight: GatewayService {
    let parts: [any GatewayService]
    /// Where the answers land.
    let ingestLoop: EventLoop

    func start() throws {
        for part in parts { try part.start() }
    }

    func shutdown(_ grace: ShutdownGrace) async {
        await withTaskGroup(of: Void.self) { group in
            for part in parts { group.addTask { await part.shutdown(grace) } }
        }
        _ = try? await ingestLoop.submit {}
    }

    func cutShort() {
        for part in parts { part.cutShort() }
    }

    func close() {
        for part in parts.reversed() { part.close() }
    }
}

/// An app's broadcast and management pools: pushes in flight get the grace for their answers;
/// one still unanswered then is saved as pending.
struct BroadcastPools: GatewayService {
    let dispatch: any BroadcastAPNsDispatch

    func shutdown(_ grace: ShutdownGrace) async {
        await dispatch.shutdown(gracePeriod: grace.answers, isCutShort: grace.isCutShort)
    }

    func cutShort() { dispatch.cutShutdownShort() }
}

/// An app's personal queue: sends in flight get the grace for their answers, then the jobs
/// save their progress and resume after the next start.
extension PersonalDispatcher: GatewayService {
    package func shutdown(_ grace: ShutdownGrace) async {
        await shutdown(gracePeriod: grace.answers, isCutShort: grace.isCutShort)
    }

    package func cutShort() { cutShutdownShort() }
}

/// Webhook delivery, on a loop of its own (it waits on receivers, never on the broadcast
/// path): polls its outboxes from its start; at shutdown, attempts in flight get the grace
/// for their answers (outcomes are saved; one still unanswered stays pending and goes again).
struct WebhookDeliveryService: GatewayService {
    let delivery: WebhookDelivery
    let loop: EventLoop

    init(settings: WebhookSettings, stores: GatewayStores, clock: any WallClock, log: GatewayLog) throws {
        let loop = EventLoop.start(name: "touchline-webhooks")
        do {
            delivery = try WebhookDelivery.forStores(loop: loop, settings: settings, stores: stores, clock: clock, log: log)
        } catch {
            loop.stopAndWait()
            throw error
        }
        self.loop = loop
    }

    func start() { delivery.start() }

    func shutdown(_ grace: ShutdownGrace) async {
        await delivery.stop(gracePeriod: grace.answers, isCutShort: grace.isCutShort)
    }

    func cutShort() { delivery.cutStopShort() }

    /// Closes its readers and its loop, before the stores close.
    func close() {
        delivery.close()
        loop.stopAndWait()
    }
}
