import Foundation
import LoadKit
import Synchronization
import TouchlineCore

/// Plays a ``MatchdaySchedule`` against a running gateway in real time: creates every match's
/// channel, then posts each event when it is due and each channel's end a second or two after
/// its final whistle, and returns when the last end has been acknowledged.
///
/// The events go over `connections` keep-alive HTTP/1.1 connections, one request at a time each;
/// every connection owns a fixed share of the matches (match `i` on connection `i % K`), so a
/// channel's `seq` (1, 2, 3... in schedule order) grows in one thread only. Each event's patch
/// carries `sentAt`, the wall clock just before its request is written.
///
/// Any answer but 202 (201 or 200 for a create) fails the run, with the channel, the `seq` and
/// the answer; the run still plays to its end so that the figures of what was accepted can be
/// reported beside the failure.
struct MatchdayTraffic {
    /// An answer that was not the expected one.
    struct Refusal: Sendable, CustomStringConvertible {
        var channel: String
        /// The event's `seq`; nil for the end.
        var seq: Int?
        var status: Int
        var answer: String

        var description: String {
            "\(channel) \(seq.map { "seq \($0)" } ?? "end") answered \(status): \(answer.prefix(300))"
        }
    }

    struct Result: Sendable {
        /// Events acknowledged with 202, by kind.
        var eventsSent: [MatchdayEvent.Kind: Int]
        /// Ends acknowledged with 202.
        var endsSent: Int
        /// From just before each event or end request to its 202 (durable), in ms.
        var acknowledgedMilliseconds: [Double]
        /// How late each request started after its due time, in ms: stalls of the sender (or of a
        /// slow answer to the previous request on the same connection) that the acknowledged
        /// times do not show.
        var latenessMilliseconds: [Double]
        /// Seconds spent creating the channels, before the schedule starts.
        var createSeconds: Double
        /// CLOCK_MONOTONIC (ns) of the schedule's offset 0 and of the last end's acknowledgement.
        var startNanoseconds: Int64
        var finishNanoseconds: Int64
        /// Answers that were not 202; a run with any failed.
        var refusals: [Refusal]

        var seconds: Double { Double(finishNanoseconds - startNanoseconds) / 1e9 }
    }

    /// A run that got answers other than 202: the error names them, `result` keeps the figures.
    struct Refused: Error, CustomStringConvertible {
        var result: Result

        var description: String {
            let shown = result.refusals.prefix(5).map(\.description).joined(separator: "; ")
            return "matchday: \(result.refusals.count) request(s) refused: \(shown)"
                + (result.refusals.count > 5 ? "; ..." : "")
        }
    }

    let schedule: MatchdaySchedule
    let connections: Int
    let connect: @Sendable () throws -> HTTPLoadClient

    /// One request a connection sends: an event (with its `seq`) or a match's end.
    private struct Send: Sendable {
        var offsetNanoseconds: Int64
        var match: Int
        /// The index of the event in the schedule, nil for the end.
        var event: Int?
        var seq: Int
    }

    /// What one connection did.
    private struct ConnectionResult: Sendable {
        var eventsSent: [MatchdayEvent.Kind: Int] = [:]
        var endsSent = 0
        var acknowledged: [Double] = []
        var lateness: [Double] = []
        var refusals: [Refusal] = []
        var finishedAt: Int64 = 0
    }

    func run() throws -> Result {
        let createStart = monotonicNanoseconds()
        let bodies = Dictionary(uniqueKeysWithValues: schedule.matches.map { ($0.channelID, $0.createBody) })
        try ChannelCreation.create(schedule.matches.map(\.channelID), connections: connections, body: { bodies[$0]! }, connect: connect)
        let createSeconds = Double(monotonicNanoseconds() - createStart) / 1e9
        let plans = sendPlans()
        let (schedule, connect) = (schedule, connect)
        let stop = StopSignal()
        // A little head start so every thread has connected before the first kickoff.
        let start = monotonicNanoseconds() + 200_000_000
        let results = try onThreads(plans.count) { index in
            do {
                return try Self.play(plans[index], schedule: schedule, client: connect(), start: start, stop: stop)
            } catch {
                stop.raise()
                throw error
            }
        }
        var eventsSent = Dictionary(uniqueKeysWithValues: MatchdayEvent.Kind.allCases.map { ($0, 0) })
        for result in results {
            eventsSent.merge(result.eventsSent, uniquingKeysWith: +)
        }
        let result = Result(eventsSent: eventsSent, endsSent: results.map(\.endsSent).reduce(0, +),
                            acknowledgedMilliseconds: results.flatMap(\.acknowledged), latenessMilliseconds: results.flatMap(\.lateness),
                            createSeconds: createSeconds, startNanoseconds: start,
                            finishNanoseconds: results.map(\.finishedAt).max() ?? start, refusals: results.flatMap(\.refusals))
        guard result.refusals.isEmpty else { throw Refused(result: result) }
        return result
    }

    /// Creates the channels over the connections in parallel; a create must answer 201 (or 200
    /// for a channel that already exists as asked).
    /// Each connection's requests in the order they are due: its matches' events with their
    /// `seq`, and each match's end.
    private func sendPlans() -> [[Send]] {
        let count = min(connections, schedule.matches.count)
        var plans = [[Send]](repeating: [], count: count)
        var lastSeq = [Int](repeating: 0, count: schedule.matches.count)
        for (index, event) in schedule.events.enumerated() {
            lastSeq[event.match] += 1
            plans[event.match % count].append(Send(offsetNanoseconds: event.offsetNanoseconds, match: event.match, event: index,
                                                   seq: lastSeq[event.match]))
        }
        for match in schedule.matches {
            plans[match.index % count].append(Send(offsetNanoseconds: match.endOffsetNanoseconds, match: match.index, event: nil, seq: 0))
        }
        // Stable: a match's events keep their order, and its end is due after its last event.
        return plans.map { plan in
            plan.enumerated().sorted { ($0.element.offsetNanoseconds, $0.offset) < ($1.element.offsetNanoseconds, $1.offset) }.map(\.element)
        }
    }

    private static func play(_ plan: [Send], schedule: MatchdaySchedule, client: HTTPLoadClient, start: Int64,
                             stop: StopSignal) throws -> ConnectionResult {
        let clock = SystemClock()
        var result = ConnectionResult()
        result.acknowledged.reserveCapacity(plan.count)
        result.lateness.reserveCapacity(plan.count)
        for send in plan {
            guard !stop.raised else { break }
            let due = start + send.offsetNanoseconds
            sleep(untilMonotonic: due)
            let match = schedule.matches[send.match]
            let before = monotonicNanoseconds()
            result.lateness.append(Double(before - due) / 1e6)
            let sentAt = clock.now().nanoseconds
            let response: HTTPLoadClient.Response
            if let index = send.event {
                response = try client.send("POST", match.eventsPath, body: schedule.events[index].body(seq: send.seq, sentAt: sentAt))
            } else {
                response = try client.send("POST", match.endPath, body: match.endBody(sentAt: sentAt))
            }
            let after = monotonicNanoseconds()
            guard response.status == 202 else {
                result.refusals.append(Refusal(channel: match.channelID, seq: send.event == nil ? nil : send.seq,
                                               status: response.status, answer: response.text))
                continue
            }
            result.acknowledged.append(Double(after - before) / 1e6)
            if let index = send.event {
                result.eventsSent[schedule.events[index].kind, default: 0] += 1
            } else {
                result.endsSent += 1
                result.finishedAt = after
                LoadProgress.shared.matchEnded()
            }
        }
        return result
    }
}

/// Tells the other connections to stop when one of them failed (its connection broke), so a
/// broken run ends at once instead of after the whole schedule.
private final class StopSignal: Sendable {
    private let flag = Atomic<Bool>(false)

    var raised: Bool { flag.load(ordering: .relaxed) }
    func raise() { flag.store(true, ordering: .relaxed) }
}
