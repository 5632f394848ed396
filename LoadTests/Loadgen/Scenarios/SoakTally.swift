import Foundation
import LoadKit
import Synchronization

/// How the soak's requests fared, counted as their answers come, per segment of the run (from
/// one check to the next) and per second, and what a client does next.
///
/// An answer is what a provider expects (a 2xx, or a refusal the caller tolerates), a transient
/// refusal it retries after `Retry-After` (503 `store_unavailable` while the disk is full, 503
/// `reconciling` after a restart), a request lost to a kill (sent again), or **unexpected**:
/// anything else, such as a 503 `store_unavailable` with a healthy disk, a connection dropped
/// while the gateway was up, or a status the request should never get. Unexpected answers are
/// how slow clients hurting real ones, or a broken gateway, would show.
final class SoakTally: Sendable {
    /// What the client does next.
    enum Step {
        case done(HTTPLoadClient.Response)
        case retry(afterSeconds: Double)
    }

    struct Segment: Sendable {
        var requests = 0
        var eventsAcknowledged = 0
        var storeUnavailable = 0
        var reconciling = 0
        var lostToKills = 0
        var unexpected = 0
    }

    private struct State {
        var segments = [Segment()]
        var eventsPerSecond: [Double] = []
        var refusedPerSecond: [Double] = []
        var lostPerSecond: [Double] = []
        var unexpectedExamples: [String] = []
        var answeredMilliseconds: [Double] = []
        var violations: [String] = []
        var diskFull = false
    }

    private let state = Mutex(State())
    private let runStart: Int64

    init(runStart: Int64) { self.runStart = runStart }

    /// While true, a 503 `store_unavailable` is what the disk episode should cause.
    func setDiskFull(_ full: Bool) { state.withLock { $0.diskFull = full } }

    /// Judges `answer` to `request` (`POST /v1/...`, for messages): `success` statuses end the
    /// request, as do refusals whose `error` code is in `tolerated` (the caller reads them).
    func judge(_ answer: GatedClient.Answer, request: String, success: Set<Int>, tolerated: Set<String> = []) -> Step {
        switch answer {
        case .answered(let response, let milliseconds):
            if success.contains(response.status) {
                record { $0.answeredMilliseconds.append(milliseconds) }
                return .done(response)
            }
            let code = response.errorCode
            if let code, tolerated.contains(code) {
                record { _ in }
                return .done(response)
            }
            switch (response.status, code) {
            case (503, "store_unavailable"):
                let expected = state.withLock { $0.diskFull }
                if expected {
                    record { state in
                        state.segments[state.segments.count - 1].storeUnavailable += 1
                        Self.add(1, to: &state.refusedPerSecond, at: self.second)
                    }
                } else {
                    unexpected("\(request) answered 503 store_unavailable with the disk not full")
                }
            case (503, "reconciling"):
                record { $0.segments[$0.segments.count - 1].reconciling += 1 }
            default:
                unexpected("\(request) answered \(response.status): \(response.text.prefix(200))")
            }
            return .retry(afterSeconds: 1)
        case .lost(let killed, let reason):
            if killed {
                record { state in
                    state.segments[state.segments.count - 1].lostToKills += 1
                    Self.add(1, to: &state.lostPerSecond, at: self.second)
                }
                return .retry(afterSeconds: 0.05)
            }
            unexpected("\(request) lost while the gateway was up: \(reason)")
            return .retry(afterSeconds: 0.2)
        }
    }

    /// `count` events newly acknowledged.
    func eventsAcknowledged(_ count: Int) {
        state.withLock { state in
            state.segments[state.segments.count - 1].eventsAcknowledged += count
            Self.add(Double(count), to: &state.eventsPerSecond, at: second)
        }
    }

    /// An answer that breaks the API's promises (a 202 whose `lastSeq` is below the batch it
    /// acknowledged): a gateway bug, reported with the checks.
    func violation(_ message: String) {
        state.withLock { $0.violations.append(message) }
    }

    var violations: [String] { state.withLock { $0.violations } }

    /// Closes the current segment (at a check) and returns it.
    func closeSegment() -> Segment {
        state.withLock { state in
            state.segments.append(Segment())
            return state.segments[state.segments.count - 2]
        }
    }

    var segments: [Segment] { state.withLock { $0.segments } }
    var unexpectedExamples: [String] { state.withLock { $0.unexpectedExamples } }
    var unexpectedTotal: Int { state.withLock { $0.segments.reduce(0) { $0 + $1.unexpected } } }
    /// Request → whole answer, for requests answered with a success status.
    var answeredMilliseconds: [Double] { state.withLock { $0.answeredMilliseconds } }
    var series: (events: [Double], refused: [Double], lost: [Double]) {
        state.withLock { ($0.eventsPerSecond, $0.refusedPerSecond, $0.lostPerSecond) }
    }

    private func unexpected(_ message: String) {
        record { state in
            state.segments[state.segments.count - 1].unexpected += 1
            if state.unexpectedExamples.count < 20 {
                state.unexpectedExamples.append(String(format: "at %.2f s: ", Double(monotonicNanoseconds() - self.runStart) / 1e9) + message)
            }
        }
    }

    /// Counts one answered or lost request, plus what `change` adds.
    private func record(_ change: (inout State) -> Void) {
        state.withLock { state in
            state.segments[state.segments.count - 1].requests += 1
            change(&state)
        }
    }

    private var second: Int { Int((monotonicNanoseconds() - runStart) / 1_000_000_000) }

    private static func add(_ value: Double, to series: inout [Double], at second: Int) {
        if series.count <= second { series += repeatElement(0, count: second + 1 - series.count) }
        series[second] += value
    }
}

extension SoakTally {
    /// Sends a request again and again, as a provider does, until it is done: a success status
    /// or a tolerated refusal (see ``judge(_:request:success:tolerated:)``). Gives up (nil) only
    /// once `stop` is set and 60 s more have passed, so a run always ends.
    func complete(_ request: String, success: Set<Int>, tolerated: Set<String> = [], stop: StopFlag,
                  _ send: () -> GatedClient.Answer) -> HTTPLoadClient.Response? {
        var giveUp: Int64?
        while true {
            switch judge(send(), request: request, success: success, tolerated: tolerated) {
            case .done(let response): return response
            case .retry(let seconds): Thread.sleep(forTimeInterval: seconds)
            }
            if stop.isSet {
                giveUp = giveUp ?? monotonicNanoseconds() + 60_000_000_000
                if monotonicNanoseconds() > giveUp! { return nil }
            }
        }
    }
}
