import Foundation
import NATS
import Testing
import Touchline
import TouchlineCore

/// The `store` setting: SQLite by default, a NATS JetStream cluster when asked, every bad value
/// refused in one line naming the member and where it was set, and no secret in the report.
@Suite struct StoreSettingsTests {
    @Test func sqliteIsTheDefaultAndJetStreamTakesEveryMember() throws {
        let defaults = try GatewayConfiguration.load(arguments: [], environment: GatewayConfigurationTests.dev)
        #expect(defaults.store == StoreSettings())
        #expect(defaults.store.backend == .sqlite && defaults.store.jetStream == nil)

        let files = try ConfigurationFiles()
        let file = try files.write("cluster.json", """
            {"store": {"backend": "jetstream", "servers": ["nats://10.0.0.1:4222", "tls://10.0.0.2:4222"], "instance": "gw-1",
                       "credentialsFile": "/etc/touchline/gw.creds", "tls": {"caFile": "/etc/touchline/nats-ca.pem"},
                       "prefix": "league", "replicas": 5, "partitions": 128, "snapshotLogBytes": 65536,
                       "limits": {"partitionLogBytes": 134217728, "registryBytes": 8589934592}, "finishedJobRetentionSeconds": 86400,
                       "registrySnapshotEntries": 50000, "registry": "partitioned",
                       "leases": {"ttlMilliseconds": 1500, "memberTTLMilliseconds": 2000}}}
            """)
        let configuration = try GatewayConfiguration.load(arguments: ["--config", file], environment: GatewayConfigurationTests.dev)
        let cluster = try #require(configuration.store.jetStream)
        #expect(configuration.store.backend == .jetstream)
        #expect(cluster.servers == ["nats://10.0.0.1:4222", "tls://10.0.0.2:4222"])
        #expect(cluster.instance == InstanceID("gw-1"))
        #expect(cluster.authentication == .credentialsFile("/etc/touchline/gw.creds"))
        #expect(cluster.tls == NATSSettings.TLS(caFile: "/etc/touchline/nats-ca.pem"))
        #expect(cluster.prefix == "league" && cluster.replicas == 5 && cluster.partitions == 128 && cluster.snapshotLogBytes == 65_536)
        var limits = ClusterStorageLimits()
        limits.partitionLogBytes = 128 << 20
        limits.registryBytes = 8 << 30
        #expect(cluster.limits == limits, "the members given, the others' defaults")
        #expect(cluster.finishedJobRetention == .seconds(86_400) && cluster.registrySnapshotEntries == 50_000)
        #expect(cluster.registry == .partitioned)
        // The TTL given, the others in its proportions unless given.
        let leases = try cluster.leases.leaseSettings(partitions: cluster.partitions)
        #expect([leases.leaseTTL, leases.renewInterval, leases.safetyMargin, leases.memberTTL, leases.writeTimeout, leases.retryDelay]
                == [.milliseconds(1_500), .milliseconds(500), .milliseconds(250), .milliseconds(2_000), .milliseconds(250), .milliseconds(125)])
        #expect(leases.partitionCount == 128)
        #expect(JetStreamSettings(servers: ["nats://n1"], instance: InstanceID("a")!).leases == .standard)
        #expect(try ClusterLeaseTiming.standard.leaseSettings(partitions: 64) == LeaseSettings(partitionCount: 64), "the standard timing is the core's default")
        #expect(limits.total(partitions: 128) == 128 * (128 << 20) + (256 << 20) + (10 << 30) + (8 << 30) + (4 << 30) + (1 << 30) + 2 * (256 << 20) + (16 << 20))

        // Later sources replace the whole object; members left out take their defaults.
        let flagged = try GatewayConfiguration.load(
            arguments: ["--config", file, "--store", #"{"backend": "jetstream", "servers": ["nats://127.0.0.1:4222"], "instance": "b"}"#],
            environment: GatewayConfigurationTests.dev)
        #expect(flagged.store.jetStream == JetStreamSettings(servers: ["nats://127.0.0.1:4222"], instance: InstanceID("b")!))
        let back = try GatewayConfiguration.load(arguments: ["--config", file],
                                                 environment: GatewayConfigurationTests.dev.merging(["TOUCHLINE_STORE": #"{"backend": "sqlite"}"#]) { $1 })
        #expect(back.store == StoreSettings())
    }

    @Test func theInstanceDefaultsToTheHostName() throws {
        let configuration = try GatewayConfiguration.load(arguments: ["--store", #"{"backend": "jetstream", "servers": ["nats://n1:4222"]}"#],
                                                          environment: GatewayConfigurationTests.dev)
        let host = ProcessInfo.processInfo.hostName.prefix { $0 != "." }
        #expect(configuration.store.jetStream?.instance.description == String(host.filter { $0.isLetter || $0.isNumber || "-_".contains($0) }))
    }

    static let badValues: [(json: String, message: String)] = [
        (#"{"backend": "postgres"}"#, #"store settings member backend must be "sqlite" or "jetstream", got "postgres""#),
        (#"{"backend": "sqlite", "servers": ["nats://n1:4222"]}"#, #"store settings member servers belongs to the jetstream backend, but backend is "sqlite""#),
        (#"{"backend": "jetstream"}"#, "store settings member servers must list 1 to 32 server URLs for the jetstream backend"),
        (#"{"backend": "jetstream", "servers": []}"#, "store settings member servers must list 1 to 32 server URLs for the jetstream backend"),
        (#"{"backend": "jetstream", "servers": ["http://n1:4222"]}"#, #"store settings member servers has "http://n1:4222", which is not a nats:// or tls:// URL"#),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "instance": "gw.1"}"#,
         #"store settings member instance must be 1 to 64 of A-Z, a-z, 0-9, '-' and '_', got "gw.1""#),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "replicas": 0}"#, "store settings member replicas must be a whole number from 1 to 5"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "partitions": 5000}"#, "store settings member partitions must be a whole number from 1 to 4096"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "snapshotLogBytes": 100}"#,
         "store settings member snapshotLogBytes must be a whole number from 1024 to 1073741824"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "prefix": "Touch.line"}"#,
         #"store settings member prefix must be 1 to 32 of a-z, 0-9 and '_', starting with a letter, got "Touch.line""#),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "token": "t", "credentialsFile": "/c"}"#,
         "store settings members token and credentialsFile are two ways to authenticate: keep one"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "user": "gw"}"#, "store settings member user needs member password"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "tls": {"certificateFile": "/c.pem"}}"#,
         "store settings members tls.certificateFile and tls.keyFile go together"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "tls": {"ca": "/c.pem"}}"#, "store settings has unknown key 'tls.ca'"),
        (#"{"backend": "jetstream", "server": ["nats://n1"]}"#, "store settings has unknown key 'server' (did you mean 'servers'?)"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "limits": {"partitionLogBytes": 100}}"#,
         "store settings member limits.partitionLogBytes must be a whole number from 1048576 to 1099511627776"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "limits": {"partitionLogByte": 1048576}}"#,
         "store settings has unknown key 'limits.partitionLogByte' (did you mean 'partitionLogBytes'?)"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "limits": 5}"#, "store settings member limits must be an object"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "finishedJobRetentionSeconds": 10}"#,
         "store settings member finishedJobRetentionSeconds must be a whole number from 60 to 7776000"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "registrySnapshotEntries": 5}"#,
         "store settings member registrySnapshotEntries must be a whole number from 10 to 100000000"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "registry": "sharded"}"#,
         #"store settings member registry must be "shared" or "partitioned", got "sharded""#),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "leases": {"renewIntervalMilliseconds": 500}}"#,
         "store settings member leases needs ttlMilliseconds (the others default to its standard proportions)"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "leases": {"ttlMilliseconds": 100}}"#,
         "store settings member leases.ttlMilliseconds must be a whole number from 300 to 60000"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "leases": {"ttlMilliseconds": 1500, "renewIntervalMilliseconds": 800}}"#,
         "store settings member leases.renewIntervalMilliseconds must be less than half of ttlMilliseconds (1.5 seconds), not 0.8 seconds: one lost renewal would lose the lease"),
        (#"{"backend": "jetstream", "servers": ["nats://n1"], "leases": {"ttlMillisecond": 1500}}"#,
         "store settings has unknown key 'leases.ttlMillisecond' (did you mean 'ttlMilliseconds'?)"),
    ]

    @Test func eachBadValueIsRefusedInOneLineNamingTheMemberAndItsSource() throws {
        for bad in Self.badValues {
            let found = problems(["--store", bad.json], GatewayConfigurationTests.dev)
            #expect(found.map(\.message) == [bad.message], "\(bad.json)")
            #expect(found.first?.source?.description == "flag --store")
        }
        let files = try ConfigurationFiles()
        let file = try files.write("touchline.json", #"{"store": {"backend": "jetstream", "servers": ["nats://n1"], "replicas": "three"}}"#)
        let found = problems(["--config", file], GatewayConfigurationTests.dev).map(\.description)
        #expect(found.count == 1 && found[0].hasPrefix("store member replicas must be a whole number from 1 to 5") && found[0].contains(file), "\(found)")
    }

    @Test func theReportNamesTheClusterButNotItsSecrets() throws {
        let configuration = try GatewayConfiguration.load(
            arguments: ["--store", #"{"backend": "jetstream", "servers": ["nats://n1:4222"], "instance": "gw-2", "user": "gw", "password": "hunter2-secret"}"#],
            environment: GatewayConfigurationTests.dev)
        let report = try GatewayConfiguration.resolve(
            arguments: ["--store", #"{"backend": "jetstream", "servers": ["nats://n1:4222"], "instance": "gw-2", "token": "s3cr3t-token"}"#],
            environment: GatewayConfigurationTests.dev).report.description
        #expect(configuration.store.jetStream?.authentication == .user("gw", password: "hunter2-secret"))
        let line = try #require(report.split(separator: "\n").first { $0.hasPrefix("store ") })
        #expect(line.contains("jetstream: servers: nats://n1:4222; instance: gw-2; authentication: token (set)"), "\(line)")
        #expect(line.contains("flag --store"), "\(line)")
        #expect(!report.contains("s3cr3t-token"))
    }
}
