import Glibc
import NATS
import TouchlineCore

/// Where the gateway keeps what it acknowledges (`store` in the file, `TOUCHLINE_STORE` or
/// `--store`, one JSON object).
///
/// `sqlite` (the default) is one gateway with its SQLite files in the data directory and no
/// other process. `jetstream` is several gateways sharing a NATS JetStream cluster
/// (docs/cluster.md): what one acknowledges is stored on a quorum of the cluster's servers, and
/// another takes over its channels when it dies.
public struct StoreSettings: Sendable, Equatable {
    public enum Backend: String, Sendable, Equatable, CaseIterable {
        case sqlite
        case jetstream
    }

    public var backend: Backend
    /// The cluster, when ``backend`` is `.jetstream` (nil otherwise).
    public var jetStream: JetStreamSettings?

    public init(backend: Backend = .sqlite, jetStream: JetStreamSettings? = nil) {
        self.backend = backend
        self.jetStream = jetStream
    }

    /// Members of the `store` object besides `backend`: the cluster's.
    static let clusterMembers = ["servers", "instance", "token", "user", "password", "credentialsFile", "nkey", "tls", "prefix",
                                 "replicas", "partitions", "snapshotLogBytes", "reconcileIntervalSeconds", "limits",
                                 "finishedJobRetentionSeconds", "registrySnapshotEntries", "registry", "leases"]

    /// Settings from JSON: `{"backend": "sqlite"}`, or `{"backend": "jetstream", "servers": [...], ...}`.
    init(json value: JSONValue, defaultInstance: String) throws(InvalidConfigurationValue) {
        let members = try ConfigurationMembers.members(of: value, allowed: ["backend"] + Self.clusterMembers, path: nil)
        let name = try members["backend"].map { value throws(InvalidConfigurationValue) in try Self.string(value, "backend") } ?? "sqlite"
        guard let backend = Backend(rawValue: name) else {
            throw InvalidConfigurationValue("member backend must be \"sqlite\" or \"jetstream\", got \"\(name)\"")
        }
        self.backend = backend
        switch backend {
        case .sqlite:
            if let stray = Self.clusterMembers.first(where: { members[$0] != nil }) {
                throw InvalidConfigurationValue("member \(stray) belongs to the jetstream backend, but backend is \"sqlite\"")
            }
            jetStream = nil
        case .jetstream:
            jetStream = try JetStreamSettings(members: members, defaultInstance: defaultInstance)
        }
    }

    /// The default instance name: the host name's first label, as far as it is a valid name.
    static var hostInstance: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "touchline" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let label = String(decoding: bytes, as: UTF8.self).prefix { $0 != "." }
        let name = String(label.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }.prefix(64))
        return name.isEmpty ? "touchline" : name
    }

    static func string(_ value: JSONValue, _ path: String) throws(InvalidConfigurationValue) -> String {
        guard case .string(let text) = value, !text.isEmpty else { throw InvalidConfigurationValue("member \(path) must be a non-empty string") }
        return text
    }
}

/// The NATS JetStream cluster of the `jetstream` backend: how to reach it, who this gateway is
/// in it, and the names and shape of what the gateways share there.
public struct JetStreamSettings: Sendable, Equatable {
    /// `nats://host:port` (or `tls://`) URLs of the cluster's servers; the client learns the rest.
    public var servers: [String]
    /// This gateway's name in the cluster: in its leases, `/readyz` and `/metrics` (default: the
    /// host name). Two running gateways must not share one.
    public var instance: InstanceID
    public var authentication: NATSSettings.Authentication
    public var tls: NATSSettings.TLS?
    /// Streams and buckets are named after it, so that deployments can share a cluster.
    public var prefix: String
    /// Servers holding each stream and bucket; an acknowledged write is on a majority of them.
    public var replicas: Int
    /// Channels are spread over this many partitions, fixed when the cluster's streams are
    /// first created (a cluster created with another count is refused at start).
    public var partitions: Int
    /// A partition's log gets a snapshot of its channels once this many bytes of batches were
    /// logged since its last snapshot (and at least as many as that snapshot weighs), and is
    /// trimmed below it: a new owner reads the snapshot and what follows (docs/cluster.md,
    /// "Snapshots"). Lower: faster takeovers, more snapshot writes.
    public var snapshotLogBytes: Int
    /// How often the gateway holding partition 0 compares Apple's list of the app's channels
    /// with every gateway's channels; an APNs channel unaccounted for in two rounds this far
    /// apart is an orphan of a lost create and is deleted at Apple (docs/cluster.md,
    /// "Reconciliation with APNs' list-all"). Longer than any create takes to save its id.
    public var reconcileInterval: Duration
    /// The size limit of every stream and bucket, each alerted on before it is reached.
    public var limits: ClusterStorageLimits
    /// How long a finished personal job stays in the job bucket (and its status, counts and
    /// idempotent answer on the API) before it is removed (docs/cluster.md, "Finished jobs expire").
    public var finishedJobRetention: Duration
    /// Registry log entries between two snapshots of the token registry; the log keeps about
    /// twice this many (docs/cluster.md, "Compacting the token registry").
    public var registrySnapshotEntries: Int
    /// How the gateways hold the token registry: a whole copy each, or partitioned like the
    /// channels (docs/cluster.md, "The partitioned token registry"). Every gateway of a cluster
    /// must say the same (a gateway set otherwise is refused at start).
    public var registry: RegistryLayout
    /// This gateway's lease timing: how soon the others take its partitions over when it dies.
    public var leases: ClusterLeaseTiming

    /// How a cluster's gateways hold the token registry.
    public enum RegistryLayout: String, Sendable, Equatable, CaseIterable {
        /// One log; every gateway applies all of it to its own whole copy.
        case shared
        /// One log per partition; each partition's owner holds its tokens and serves them.
        case partitioned
    }

    public init(servers: [String], instance: InstanceID, authentication: NATSSettings.Authentication = .none, tls: NATSSettings.TLS? = nil,
                prefix: String = "touchline", replicas: Int = 3, partitions: Int = 64, snapshotLogBytes: Int = 262_144,
                reconcileInterval: Duration = .seconds(600), limits: ClusterStorageLimits = ClusterStorageLimits(),
                finishedJobRetention: Duration = .seconds(7 * 86_400), registrySnapshotEntries: Int = 100_000,
                registry: RegistryLayout = .shared, leases: ClusterLeaseTiming = .standard) {
        self.servers = servers
        self.instance = instance
        self.authentication = authentication
        self.tls = tls
        self.prefix = prefix
        self.replicas = replicas
        self.partitions = partitions
        self.snapshotLogBytes = snapshotLogBytes
        self.reconcileInterval = reconcileInterval
        self.limits = limits
        self.finishedJobRetention = finishedJobRetention
        self.registrySnapshotEntries = registrySnapshotEntries
        self.registry = registry
        self.leases = leases
    }

    init(members: [String: JSONValue], defaultInstance: String) throws(InvalidConfigurationValue) {
        guard case .array(let urls)? = members["servers"], !urls.isEmpty, urls.count <= 32 else {
            throw InvalidConfigurationValue("member servers must list 1 to 32 server URLs for the jetstream backend")
        }
        servers = try urls.map { value throws(InvalidConfigurationValue) in
            let url = try StoreSettings.string(value, "servers[]")
            guard url.hasPrefix("nats://") || url.hasPrefix("tls://"), url.count <= 512, !url.contains(where: \.isWhitespace) else {
                throw InvalidConfigurationValue("member servers has \"\(url)\", which is not a nats:// or tls:// URL")
            }
            return url
        }
        let name = try members["instance"].map { value throws(InvalidConfigurationValue) in try StoreSettings.string(value, "instance") }
            ?? defaultInstance
        guard let instance = InstanceID(name) else {
            throw InvalidConfigurationValue("member instance must be 1 to 64 of A-Z, a-z, 0-9, '-' and '_', got \"\(name)\"")
        }
        self.instance = instance
        authentication = try Self.authentication(members)
        tls = try members["tls"].map { value throws(InvalidConfigurationValue) in try Self.tls(value) }
        prefix = try members["prefix"].map { value throws(InvalidConfigurationValue) in try StoreSettings.string(value, "prefix") } ?? "touchline"
        guard prefix.count <= 32, prefix.first?.isLetter == true,
              prefix.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
            throw InvalidConfigurationValue("member prefix must be 1 to 32 of a-z, 0-9 and '_', starting with a letter, got \"\(prefix)\"")
        }
        replicas = try ConfigurationMembers.integer(members, "replicas", 1...5) ?? 3
        partitions = try ConfigurationMembers.integer(members, "partitions", 1...4096) ?? 64
        snapshotLogBytes = try ConfigurationMembers.integer(members, "snapshotLogBytes", 1_024...1_073_741_824) ?? 262_144
        reconcileInterval = .seconds(try ConfigurationMembers.integer(members, "reconcileIntervalSeconds", 1...86_400) ?? 600)
        limits = try members["limits"].map { value throws(InvalidConfigurationValue) in try ClusterStorageLimits(json: value) } ?? ClusterStorageLimits()
        finishedJobRetention = .seconds(try ConfigurationMembers.integer(members, "finishedJobRetentionSeconds", 60...(90 * 86_400)) ?? 7 * 86_400)
        registrySnapshotEntries = try ConfigurationMembers.integer(members, "registrySnapshotEntries", 10...100_000_000) ?? 100_000
        let layout = try members["registry"].map { value throws(InvalidConfigurationValue) in try StoreSettings.string(value, "registry") } ?? "shared"
        guard let registry = RegistryLayout(rawValue: layout) else {
            throw InvalidConfigurationValue("member registry must be \"shared\" or \"partitioned\", got \"\(layout.prefix(64))\"")
        }
        self.registry = registry
        let partitionCount = partitions
        leases = try members["leases"].map { value throws(InvalidConfigurationValue) in try ClusterLeaseTiming(json: value, partitions: partitionCount) }
            ?? .standard
    }

    /// At most one way to authenticate: a token, a user and password, a `.creds` file, or an nkey.
    private static func authentication(_ members: [String: JSONValue]) throws(InvalidConfigurationValue) -> NATSSettings.Authentication {
        let ways = ["token", "user", "credentialsFile", "nkey"].filter { members[$0] != nil }
        guard ways.count <= 1 else {
            throw InvalidConfigurationValue("members \(ways.joined(separator: " and ")) are two ways to authenticate: keep one")
        }
        if let token = members["token"] { return .token(try StoreSettings.string(token, "token")) }
        if let user = members["user"] {
            guard let password = members["password"] else { throw InvalidConfigurationValue("member user needs member password") }
            return .user(try StoreSettings.string(user, "user"), password: try StoreSettings.string(password, "password"))
        }
        if members["password"] != nil { throw InvalidConfigurationValue("member password needs member user") }
        if let path = members["credentialsFile"] { return .credentialsFile(try StoreSettings.string(path, "credentialsFile")) }
        if let nkey = members["nkey"] {
            let fields = try ConfigurationMembers.members(of: nkey, allowed: ["publicKey", "seedFile"], path: "nkey")
            guard let publicKey = fields["publicKey"], let seedFile = fields["seedFile"] else {
                throw InvalidConfigurationValue("member nkey needs publicKey and seedFile")
            }
            return .nkey(publicKey: try StoreSettings.string(publicKey, "nkey.publicKey"), seedFile: try StoreSettings.string(seedFile, "nkey.seedFile"))
        }
        return .none
    }

    private static func tls(_ value: JSONValue) throws(InvalidConfigurationValue) -> NATSSettings.TLS {
        let fields = try ConfigurationMembers.members(of: value, allowed: ["caFile", "certificateFile", "keyFile", "expectedHostname"],
                                                      path: "tls")
        func text(_ name: String) throws(InvalidConfigurationValue) -> String? {
            try fields[name].map { value throws(InvalidConfigurationValue) in try StoreSettings.string(value, "tls.\(name)") }
        }
        let tls = NATSSettings.TLS(caFile: try text("caFile"), certificateFile: try text("certificateFile"), keyFile: try text("keyFile"),
                                   expectedHostname: try text("expectedHostname"))
        guard (tls.certificateFile == nil) == (tls.keyFile == nil) else {
            throw InvalidConfigurationValue("members tls.certificateFile and tls.keyFile go together")
        }
        return tls
    }

    /// The connection settings of this gateway's NATS client.
    package var natsSettings: NATSSettings {
        NATSSettings(servers: servers, name: instance.description, authentication: authentication, tls: tls)
    }

    /// As `--check-config` shows it: secrets (the token, the password) are only said to be set.
    var summary: String {
        let authentication: String = switch authentication {
        case .none: "none"
        case .token: "token (set)"
        case .user(let user, _): "user \(user), password (set)"
        case .credentialsFile(let path): "credentials file \(path)"
        case .nkey(let publicKey, let seedFile): "nkey \(publicKey), seed file \(seedFile)"
        }
        var parts = ["servers: \(servers.joined(separator: ", "))", "instance: \(instance)", "authentication: \(authentication)"]
        if let tls {
            parts.append("tls: " + [tls.caFile.map { "CA \($0)" }, tls.certificateFile.map { "certificate \($0)" },
                                    tls.expectedHostname.map { "host name \($0)" }].compactMap { $0 }.joined(separator: ", "))
        }
        parts += ["prefix: \(prefix)", "replicas: \(replicas)", "partitions: \(partitions)", "snapshotLogBytes: \(snapshotLogBytes)",
                  "reconcileIntervalSeconds: \(reconcileInterval.components.seconds)", "limits: \(limits.summary)",
                  "finishedJobRetentionSeconds: \(finishedJobRetention.components.seconds)", "registrySnapshotEntries: \(registrySnapshotEntries)",
                  "registry: \(registry.rawValue)", "leases: \(leases.summary)"]
        return parts.joined(separator: "; ")
    }
}
