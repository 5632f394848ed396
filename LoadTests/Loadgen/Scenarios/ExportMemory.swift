import Foundation
import LoadKit
import Measurements
import Synchronization

/// `export-memory`: what a feed export costs the gateway in memory. A recording channel takes
/// `events` events (a recording's most, 100,000, by default), then is exported once, then
/// `concurrent` times at once, while the gateway's resident set (VmRSS, /proc) is sampled every
/// 20 ms. Checked: the highest sample of each phase stays within 64 MiB of the resident set the
/// gateway had, idle, just before it (issue 31: exports stream in constant memory; an export
/// that built the feed in memory took a gateway from 0.83 GB to 2.1 GB). Each export must be
/// whole: 200, its last chunk, the same bytes every time.
struct ExportMemory {
    struct Options {
        var events = 100_000
        var concurrent = 4
        var budgetMiB = 64.0
    }

    static let name = "export-memory"
    static let channel = "export-match"
    static let mebibyte = 1_048_576.0

    let options: Options
    let settings: LoadSettings

    /// One phase: how many exports at once, the resident set before and at its highest, and how long it took.
    struct Phase {
        var exports: Int
        var idleBytes: Int
        var peakBytes: Int
        var seconds: Double
        var bodyBytes: [Int]
        var whole: Bool
        var resident: TimeSeries

        var aboveIdleMiB: Double { Double(peakBytes - idleBytes) / ExportMemory.mebibyte }
    }

    func run() throws -> ScenarioResult {
        let stage = try LoadStage(settings: settings, pinMock: false)
        let log = ScenarioLog(Self.name)
        let limits = #"{"maxConcurrentExports": \#(options.concurrent), "maxExportsPerKey": \#(options.concurrent)}"#
        let gateway = try stage.startGateway(extraArguments: ["--recordings", limits])
        let pid = try stage.gatewayProcess.map(\.pid) ?? { throw LoadError("no gateway process") }()
        try record(on: gateway)
        log.say("recorded \(options.events) events")
        var phases: [Phase] = []
        for exports in [1, options.concurrent] {
            let phase = try measure(exports: exports, pid: pid, gateway: gateway)
            phases.append(phase)
            log.say(String(format: "%d export(s) at once: idle %.1f MiB, highest %.1f MiB (+%.1f MiB), %.1f s, %d bytes each", exports,
                           Double(phase.idleBytes) / Self.mebibyte, Double(phase.peakBytes) / Self.mebibyte, phase.aboveIdleMiB,
                           phase.seconds, phase.bodyBytes.first ?? 0))
        }
        stage.gatewayProcess?.stop()
        return result(phases)
    }

    /// A sports channel recording its feed, and `events` events of a match in batches of 1,000:
    /// the kick-off, then the clock and a stats line in turn.
    private func record(on gateway: GatewayTarget) throws {
        let client = try gateway.connect()
        let attributes = #"{"homeName": "Arsenal", "homeCode": "ARS", "awayName": "Chelsea", "awayCode": "CHE", "competition": "Premier League", "kickoff": 1767290400}"#
        let created = try client.send("POST", "/v1/channels", body: Array(#"{"id": "\#(Self.channel)", "storagePolicy": "no-storage", "recordFeed": true, "attributes": \#(attributes)}"#.utf8))
        guard created.status == 201 else { throw LoadError("creating the recording channel: \(created.status) \(created.text)") }
        for first in stride(from: 1, through: options.events, by: 1_000) {
            let events = (first..<min(first + 1_000, options.events + 1)).map { seq -> String in
                if seq == 1 { return #"{"seq": 1, "type": "status", "status": "live"}"# }
                return seq % 2 == 0 ? #"{"seq": \#(seq), "type": "clock", "clockSeconds": \#(seq % 5_400)}"#
                    : #"{"seq": \#(seq), "type": "stats", "homeShots": \#(seq % 40), "awayShots": \#(seq % 17), "homePossession": \#(40 + seq % 20)}"#
            }
            let posted = try client.send("POST", "/v1/channels/\(Self.channel)/events", body: Array(#"{"events": [\#(events.joined(separator: ","))]}"#.utf8))
            guard posted.status == 202 else { throw LoadError("posting events from seq \(first): \(posted.status) \(posted.text)") }
        }
    }

    /// `exports` exports at once while the resident set is sampled; the idle figure is the
    /// median of samples taken over the second before.
    private func measure(exports: Int, pid: Int32, gateway: GatewayTarget) throws -> Phase {
        var idle: [Int] = []
        for _ in 0..<20 {
            idle.append(processResidentBytes(pid: pid))
            Thread.sleep(forTimeInterval: 0.05)
        }
        let idleBytes = idle.sorted()[idle.count / 2]
        let monitor = ProcessMonitor(pids: [pid], intervalMilliseconds: 20)
        monitor.start()
        let started = monotonicNanoseconds()
        let outcomes = Mutex<[(bytes: Int, whole: Bool)]>([])
        let done = DispatchGroup()
        for _ in 0..<exports {
            done.enter()
            Thread {
                let outcome = (try? Self.export(from: gateway)) ?? (0, false)
                outcomes.withLock { $0.append(outcome) }
                done.leave()
            }.start()
        }
        done.wait()
        let seconds = Double(monotonicNanoseconds() - started) / 1e9
        let usage = try monitor.stop().first ?? { throw LoadError("the gateway's memory could not be read") }()
        let peak = max(idleBytes, Int((usage.residentMegabytes.values.max() ?? 0) * 1e6))
        let results = outcomes.withLock { $0 }
        let bodies = results.map(\.bytes)
        return Phase(exports: exports, idleBytes: idleBytes, peakBytes: peak, seconds: seconds, bodyBytes: bodies,
                     whole: results.allSatisfy(\.whole) && Set(bodies).count == 1, resident: usage.residentMegabytes)
    }

    /// One export read to its end and dropped as it comes, as a client saving it to a file
    /// would: the answer's bytes, and whether it was a 200 ending with its last chunk.
    private static func export(from gateway: GatewayTarget) throws -> (bytes: Int, whole: Bool) {
        let descriptor = try TCPSocket.connect(host: gateway.host, port: gateway.port, receiveTimeout: 60)
        defer { close(descriptor) }
        try TCPSocket.writeAll(descriptor, Array(("GET /v1/channels/\(channel)/events/export HTTP/1.1\r\nHost: \(gateway.host)\r\n"
                                                  + "Authorization: Bearer \(gateway.adminKey)\r\nConnection: close\r\n\r\n").utf8))
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var (total, start, tail) = (0, [UInt8](), [UInt8]())
        while case let count = buffer.withUnsafeMutableBytes({ recv(descriptor, $0.baseAddress, $0.count, 0) }), count > 0 {
            if start.count < 12 { start += buffer[0..<min(count, 12 - start.count)] }
            tail = Array((tail + buffer[0..<count]).suffix(7))
            total += count
        }
        let lastChunk: [UInt8] = Array("\r\n0\r\n\r\n".utf8)
        return (total, String(decoding: start, as: UTF8.self) == "HTTP/1.1 200" && tail == lastChunk)
    }

    private func result(_ phases: [Phase]) -> ScenarioResult {
        let rows = phases.map { phase in
            [String(phase.exports), String(format: "%.1f", Double(phase.idleBytes) / Self.mebibyte),
             String(format: "%.1f", Double(phase.peakBytes) / Self.mebibyte), String(format: "%.1f", phase.aboveIdleMiB),
             String(format: "%.1f", phase.seconds), String(phase.bodyBytes.first ?? 0), phase.whole ? "yes" : "no"]
        }
        return ScenarioResult(
            name: Self.name,
            description: "a recording of \(options.events) events exported once, then \(options.concurrent) times at once, "
                + "the gateway's resident set sampled every 20 ms",
            parameters: [.init(name: "recorded events", value: String(options.events)),
                         .init(name: "exports at once", value: String(options.concurrent)),
                         .init(name: "budget above idle (MiB)", value: String(format: "%.0f", options.budgetMiB))],
            durationSeconds: phases.reduce(0) { $0 + $1.seconds },
            tables: [.init(title: "Phases", columns: ["exports at once", "idle RSS (MiB)", "highest RSS (MiB)", "above idle (MiB)", "seconds",
                                                      "bytes per export", "whole"], rows: rows)],
            series: phases.map { .init(name: "gateway RSS, \($0.exports) export(s) at once", unit: "MB", kind: .resource, timeSeries: $0.resident) },
            checks: phases.map { .init(name: "RSS above idle during \($0.exports) export(s) at once (MiB)", measured: $0.aboveIdleMiB,
                                       target: options.budgetMiB, comparison: .atMost) }
                + [.init(name: "every export whole and identical", measured: phases.allSatisfy(\.whole) ? 1 : 0, target: 1, comparison: .atLeast)],
            notes: ["The idle figure is the median of 20 samples over the second before each phase; the highest is the largest 20 ms "
                    + "sample during it (VmRSS, not the process's lifetime peak, which the recording's ingest set)."])
    }
}
