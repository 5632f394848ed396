import Foundation
import Testing
import TestSlots

/// deploy/prometheus.yml and deploy/alerts.yml pass promtool, the alert rules pass their own
/// unit tests (deploy/alerts-test.yml), and they only use metrics docs/metrics.md defines.
@Suite("Prometheus files")
struct PrometheusFilesTests {
    @Test(.heavy, .enabled(if: DeployTool.exists("promtool"), "promtool (Debian prometheus) is not installed"))
    func promtoolAcceptsTheScrapeConfiguration() async throws {
        let checked = try await DeployTool.run("promtool", ["check", "config", "deploy/prometheus.yml"])
        #expect(checked.status == 0, "\(checked.output)")
        #expect(checked.output.contains("1 rule files found"), "the scrape configuration loads the alert rules: \(checked.output)")
    }

    @Test(.heavy, .enabled(if: DeployTool.exists("promtool"), "promtool (Debian prometheus) is not installed"))
    func promtoolAcceptsTheAlertRules() async throws {
        let checked = try await DeployTool.run("promtool", ["check", "rules", "deploy/alerts.yml"])
        #expect(checked.status == 0, "\(checked.output)")
    }

    @Test(.heavy, .enabled(if: DeployTool.exists("promtool"), "promtool (Debian prometheus) is not installed"))
    func theAlertsFireOnTheirUnitTestSeries() async throws {
        let tested = try await DeployTool.run("promtool", ["test", "rules", "deploy/alerts-test.yml"])
        #expect(tested.status == 0, "\(tested.output)")
    }

    @Test func everyMetricTheAlertsUseIsDocumented() throws {
        let rules = try DeployTool.read("deploy/alerts.yml")
        let documented = try DeployTool.read("docs/metrics.md")
        let used = Set(rules.matches(of: /touchline_[a-z0-9_]+/).map { String($0.output) }
            .map { $0.hasSuffix("_bucket") ? String($0.dropLast("_bucket".count)) : $0 })
        #expect(used.count >= 10)
        for metric in used {
            #expect(documented.contains("`\(metric)`"), "\(metric) is not in docs/metrics.md")
        }
    }

    @Test func everyAlertIsExplainedInTheOperationsGuide() throws {
        let rules = try DeployTool.read("deploy/alerts.yml")
        let guide = try DeployTool.read("docs/operations.md")
        let alerts = rules.matches(of: /- alert: (\w+)/).map { String($0.1) }
        #expect(alerts.count >= 10)
        for alert in alerts {
            #expect(guide.contains("`\(alert)`"), "\(alert) is not explained in docs/operations.md")
        }
    }
}
