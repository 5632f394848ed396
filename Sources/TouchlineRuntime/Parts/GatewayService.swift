import Synchronization

/// A long-lived part of the gateway (its loops, stores, cluster node, APNs pools, personal
/// queues, webhook delivery, channels and HTTP server, the bundled mock): each starts, runs and
/// shuts down the same way, so that the gateway's start and shutdown are one ordered list of
/// them (``GatewayServices``), after swift-service-lifecycle's `Service` and `ServiceGroup`.
///
/// A part runs from its `start()` until its `shutdown(_:)`: a graceful stop that gives the
/// work in flight its grace, unless the grace is cut short (at once by ``cutShort()``, or from
/// the beginning when ``ShutdownGrace/isCutShort`` is true as it begins). Once every part has
/// shut down, `close()` releases what it holds (files, threads, connections).
package protocol GatewayService: Sendable {
    /// Begins its work (blocking: on the starting thread). Parts that run once made (loops,
    /// connections, stores) start nothing more. A part that throws did not start; those started
    /// before it are closed in the reverse order.
    func start() throws
    /// Stops gracefully, in the reverse order of the starts: waits for its work in flight at
    /// most the grace it takes from `grace`, and none once `grace.isCutShort()`.
    func shutdown(_ grace: ShutdownGrace) async
    /// Ends its grace under way at once (a second stop request): what is still unanswered is
    /// given up, as the shutdown documents for each part. Any thread.
    func cutShort()
    /// Releases what it holds, once every part has shut down (or a start failed), in the reverse
    /// order of the starts. Blocking: on a thread of its own, never on a loop.
    func close()
}

extension GatewayService {
    package func start() throws {}
    package func shutdown(_ grace: ShutdownGrace) async {}
    package func cutShort() {}
    package func close() {}
}

/// The graces of a shutdown: what requests in flight get (the HTTP server's), and what
/// answers in flight get (APNs pushes, webhook attempts); both end at once when cut short.
package struct ShutdownGrace: Sendable {
    package var requests: Duration
    package var answers: Duration
    /// True once a second stop request came: a step that begins then takes no grace. Each part
    /// reads it on its own loop as its step begins (``GatewayServices/cutShort()`` is queued on
    /// the same loops after the flag is set): a step begun before the escalation is cut by it.
    package var isCutShort: @Sendable () -> Bool

    package init(requests: Duration, answers: Duration, isCutShort: @escaping @Sendable () -> Bool) {
        self.requests = requests
        self.answers = answers
        self.isCutShort = isCutShort
    }
}
