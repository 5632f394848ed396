import Foundation
import Testing
import TestSlots

/// deploy/cluster/: the NATS server configuration passes nats-server's own check and maps
/// direct publishes with the gateways' partition count; the compose file runs three servers and
/// two gateways on them; Prometheus' configuration and the cluster's alerts pass promtool and
/// their unit tests, use documented metrics and are explained in the operations guide.
@Suite("Cluster deploy files")
struct ClusterDeployFilesTests {
    @Test(.heavy, .enabled(if: DeployTool.exists("nats-server"), "nats-server is not installed"))
    func natsServerAcceptsItsConfiguration() async throws {
        let checked = try await DeployTool.run("env", ["NATS_NAME=nats-1", DeployTool.path(of: "nats-server")!, "-t", "-c", "deploy/cluster/nats.conf"])
        #expect(checked.status == 0, "\(checked.output)")
        #expect(checked.output.contains("is valid"), "\(checked.output)")
    }

    @Test(.heavy, .enabled(if: DeployTool.exists("python3"), "python3 is not installed"))
    func theComposeFileRunsThreeServersAndTwoGatewaysOnThem() async throws {
        let converted = try await DeployTool.run("python3", ["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
                                                               "deploy/cluster/compose.yaml"])
        try #require(!converted.output.contains("No module named 'yaml'"), "PyYAML is not installed")
        try #require(converted.status == 0, "\(converted.output)")
        let compose = try #require(try JSONSerialization.jsonObject(with: Data(converted.output.utf8)) as? [String: Any])
        let services = try #require(compose["services"] as? [String: [String: Any]])
        #expect(Set(services.keys) == ["nats-1", "nats-2", "nats-3", "gateway-1", "gateway-2", "prometheus"])
        let configuration = try DeployTool.read("deploy/cluster/nats.conf")
        let mapped = try #require(configuration.firstMatch(of: /"touchline\.in\.\*": "touchline\.ingest\.\{\{partition\((\d+),1\)\}\}\.\{\{wildcard\(1\)\}\}"/),
                                  "the mapping of direct publishes")
        var instances: Set<String> = []
        for name in ["gateway-1", "gateway-2"] {
            let environment = try #require(services[name]?["environment"] as? [String: Any], "\(name)")
            let storeText = try #require(environment["TOUCHLINE_STORE"] as? String, "\(name)")
            let store = try #require(try JSONSerialization.jsonObject(with: Data(storeText.utf8)) as? [String: Any], "\(name)")
            #expect(store["backend"] as? String == "jetstream")
            #expect(store["servers"] as? [String] == ["nats://nats-1:4222", "nats://nats-2:4222", "nats://nats-3:4222"])
            #expect(store["partitions"] as? Int == Int(mapped.1), "the servers map direct publishes to \(mapped.1) partitions")
            instances.insert(try #require(store["instance"] as? String))
        }
        #expect(instances.count == 2, "each gateway has a name of its own")
    }

    @Test(.heavy, .enabled(if: DeployTool.exists("promtool"), "promtool (Debian prometheus) is not installed"))
    func promtoolAcceptsTheConfigurationAndTheAlertsFireOnTheirSeries() async throws {
        let configuration = try await DeployTool.run("promtool", ["check", "config", "deploy/cluster/prometheus.yml"])
        #expect(configuration.status == 0 && configuration.output.contains("2 rule files found"), "\(configuration.output)")
        let rules = try await DeployTool.run("promtool", ["test", "rules", "deploy/cluster/alerts-test.yml"])
        #expect(rules.status == 0, "\(rules.output)")
    }

    @Test func theClusterAlertsUseDocumentedMetricsAndAreExplained() throws {
        let rules = try DeployTool.read("deploy/cluster/alerts.yml")
        let metrics = try DeployTool.read("docs/metrics.md")
        let guide = try DeployTool.read("docs/operations.md")
        let used = Set(rules.matches(of: /touchline_[a-z0-9_]+/).map { String($0.output) })
        #expect(used.count >= 3)
        for metric in used { #expect(metrics.contains("`\(metric)`"), "\(metric) is not in docs/metrics.md") }
        let alerts = rules.matches(of: /- alert: (\w+)/).map { String($0.1) }
        #expect(alerts.count == 5)
        for alert in alerts { #expect(guide.contains("`\(alert)`"), "\(alert) is not explained in docs/operations.md") }
    }
}
