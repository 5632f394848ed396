import TouchlineAccess
import TouchlineChannels
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

/// A gateway on its own (the `sqlite` store backend, or in-memory stores in tests): it acts for
/// every channel, keeps every personal job in its personal file, serves every request itself,
/// and its token registry is its file, always complete.
struct OneGatewayBackend: GatewayBackend {
    /// Opens both stores (SQLite in the data directory by default).
    let openStores: @Sendable (_ configuration: GatewayConfiguration) throws -> GatewayStores

    func start(into services: GatewayServices, loops: GatewayLoops, configuration: GatewayConfiguration, clock: any WallClock,
               log: GatewayLog) throws -> any StartedBackend {
        Started(stores: try services.start(try openStores(configuration)))
    }

    private struct Started: StartedBackend {
        let stores: GatewayStores
        var ownership: any ChannelOwnership { AllChannels() }
        var recordings: any FeedRecordings { StoredFeedRecordings(openReader: stores.channelReader) }
        var registry: any TokenRegistryCopy { CompleteRegistry() }
        var instanceName: String? { nil }
        var operatorView: any BackendOperatorView { NothingShared() }

        func jobBoard(queues: PerApp<PersonalDispatcher>, loop: EventLoop, outbox: WebhookOutbox?, clock: any WallClock,
                      log: GatewayLog) throws -> any PersonalJobBoard {
            OwnJobs()
        }

        func front(to router: APIRouter) -> @Sendable (HTTPRequest) -> Void {
            { request in router.handle(request) }
        }

        func begin(service: ChannelService, router: APIRouter, reader: any ChannelStoreReader,
                   resumePersonalJobs: @escaping (Set<String>) -> Void) throws {
            try service.restore(from: reader, resumePersonalJobs: resumePersonalJobs)
        }

        func release() {}
    }

    /// A gateway's own file is the whole registry.
    private struct CompleteRegistry: TokenRegistryCopy {
        var isCaughtUp: Bool { true }
        var catchUpProgress: (applied: UInt64, target: UInt64) { (0, 0) }
    }

    /// Nothing beyond the stores and pools to report: always connected, no member, no family.
    private struct NothingShared: BackendOperatorView {
        var takesRequests: Bool { true }
        func readinessMember() -> JSONValue.Member? { nil }
        func metricFamilies() -> [MetricFamily] { [] }
    }
}
