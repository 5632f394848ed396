import ChildProcesses
import Foundation
import Testing
import TestSlots
import TouchlineCore
import TouchlineTesting

/// A real Prometheus server scrapes the gateway every second; its query API must then return
/// the gateway's series. Needs the `prometheus` binary (Debian package prometheus, `make deps`).
@Suite("Prometheus scrape", .heavy)
struct PrometheusScrapeTests {
    @Test(.enabled(if: executable("prometheus") != nil, "the prometheus binary is missing: install the Debian package prometheus (make deps)"))
    func aPrometheusServerScrapesTheGateway() async throws {
        let gateway = try GatewayFixture()
        let api = gateway.admin
        #expect(try api.request("POST", "/v1/channels", json: #"{"id": "scraped", "storagePolicy": "no-storage"}"#).status == 201)
        #expect(try api.request("POST", "/v1/channels/scraped/events", json: #"{"seq": 1, "patch": {"v": 1}}"#).status == 202)

        let directory = gateway.directory + "/prometheus"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            scrape_configs:
              - job_name: touchline
                static_configs:
                  - targets: ["127.0.0.1:\(gateway.port)"]
            """.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        let port = try LoopbackSocket.freePort()
        // The server runs under a shell that stops it once its stdin closes: when this test ends,
        // or when the test process dies, so a crashed run cannot leave the server behind.
        let server = try ChildProcess("/bin/sh", ["-c", #""$0" "$@" </dev/null & server=$!; read -r _; kill "$server"; wait "$server""#,
                                                  executable("prometheus")!, "--config.file=\(directory)/prometheus.yml",
                                                  "--storage.tsdb.path=\(directory)/data", "--web.listen-address=127.0.0.1:\(port)"],
                                      input: .pipe, output: .null, errors: .null)
        defer {
            server.input!.close()
            server.wait()
        }

        let prometheus = GatewayTestClient(port: port)
        var found: JSONValue?
        try await eventually("Prometheus to return the scraped series", timeout: .seconds(60)) {
            guard let answer = try? prometheus.request("GET", "/api/v1/query?query=touchline_events_received_total").json,
                  case .array(let results)? = answer[member: "data"]?[member: "result"], let first = results.first else { return false }
            found = first
            return true
        }
        let series = try #require(found)
        #expect(series[member: "metric"]?.string("channel") == "scraped")
        #expect(series[member: "metric"]?.string("job") == "touchline")
        guard case .array(let sample)? = series[member: "value"], sample.count == 2 else { Issue.record("no sample in \(series)"); return }
        #expect(sample[1] == .string("1"))
        await gateway.shutDown()
    }
}

