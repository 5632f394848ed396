import TouchlineAccess
import TouchlineConfiguration
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

/// What a gateway stores into and how it shares its channels and jobs with other gateways: its
/// backend, picked once by the assembly (``Gateway/Backends/backend(for:)``) and asked, never
/// tested for, by every other part.
///
/// - A gateway on its own (``OneGatewayBackend``): the SQLite files of the data directory, or
///   in-memory stores in tests. It acts for every channel, keeps its jobs in its file, serves
///   every request itself, and its token registry is always complete.
/// - A member of a JetStream cluster (`ClusterBackend`, the cluster's code): the partition logs
///   and the shared token registry on NATS servers, or on the in-memory cluster in tests. It
///   acts for the channels of the partitions whose leases it holds, keeps new jobs in the
///   cluster's job bucket, and hands each request for a channel it does not own to the owner.
///
/// docs/architecture.md, "The backend", shows what each supplies.
package protocol GatewayBackend: Sendable {
    /// Starts the backend's parts into `services` once the loops run (blocking, while the
    /// gateway starts: a cluster member connects, opens its logs and buckets; the stores open)
    /// and returns what the rest of the gateway is built on.
    func start(into services: GatewayServices, loops: GatewayLoops, configuration: GatewayConfiguration, clock: any WallClock,
               log: GatewayLog) throws -> any StartedBackend
}

/// A started backend: the stores and the rules of sharing every other part uses.
package protocol StartedBackend: Sendable {
    /// The channel and personal stores, and how to read them.
    var stores: GatewayStores { get }
    /// Which channels this gateway acts for at each instant (asked before every push).
    var ownership: any ChannelOwnership { get }
    /// Where the channels' feed recordings are read.
    var recordings: any FeedRecordings { get }
    /// This gateway's copy of the token registry: whether it is complete yet.
    var registry: any TokenRegistryCopy { get }
    /// Where the token routes and the intake look tokens up, answering on `loop` (the ingest
    /// loop): through `reader`, this gateway's file, unless the registry is partitioned.
    func tokenLookups(reader: any TokenRegistryReader, loop: EventLoop) -> any TokenLookups
    /// The name a dead letter shows of the gateway that holds it (nil on its own).
    var instanceName: String? { get }
    /// What `/readyz` and `/metrics` show of the backend.
    var operatorView: any BackendOperatorView { get }

    /// The job board the intake and every app's queue use (made once, while the gateway
    /// starts; `loop` the queues').
    func jobBoard(queues: PerApp<PersonalDispatcher>, loop: EventLoop, outbox: WebhookOutbox?, clock: any WallClock,
                  log: GatewayLog) throws -> any PersonalJobBoard
    /// What answers each admitted request, in front of `router`: the router itself on its own,
    /// owner-or-forward in a cluster (a request for a channel another gateway owns is handed to it).
    func front(to router: APIRouter) -> @Sendable (HTTPRequest) -> Void
    /// Begins serving (on the ingest loop, before the HTTP server listens): on its own, the
    /// stored channels restored from `reader` and the personal jobs resumed; in a cluster,
    /// partitions taken up as their leases come.
    func begin(service: ChannelService, router: APIRouter, reader: any ChannelStoreReader,
               resumePersonalJobs: @escaping (_ openChannels: Set<String>) -> Void) throws
    /// A gateway released while it runs (its loops stopped): closes what the backend holds
    /// beyond its parts (a cluster's connection).
    func release()
}

extension StartedBackend {
    /// A registry held whole: looked up through this gateway's reader.
    package func tokenLookups(reader: any TokenRegistryReader, loop: EventLoop) -> any TokenLookups { ReaderTokenLookups(reader) }
}

/// What operators see of the backend, on the ingest loop.
package protocol BackendOperatorView {
    /// Whether the backend takes the gateway's requests (readiness): a cluster member while
    /// connected to its cluster and while the cluster stores its lease writes (without a
    /// quorum, ingest answers 503 however it is connected).
    var takesRequests: Bool { get }
    /// The backend's member of `/readyz` (nil: none).
    func readinessMember() -> JSONValue.Member?
    /// The backend's families on `/metrics`.
    func metricFamilies() -> [MetricFamily]
}
