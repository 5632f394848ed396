import APNsMock
import Foundation
import LoadKit
import Synchronization

/// Personal jobs started through the run, one every `interval` seconds, each to an audience of
/// its own: `tokensPerJob` push-to-start tokens following the job's topic, registered just
/// before (`POST /v1/tokens/batch`, repeated until answered: registration is an upsert), of
/// which `unregisteredPerJob` are then made unknown at APNs (410 `Unregistered`). Jobs alternate
/// between a kickoff (`POST /v1/channels/{id}/start`) and `POST /v1/personal`.
///
/// A job post is not idempotent: a repeat would be a second job. So a post refused with 503
/// (nothing stored) is repeated, but one whose answer was lost is not: the job may or may not
/// exist, and the final checks find out which (its dead letters name it).
struct SoakPersonalTraffic {
    let tokensPerJob: Int
    let unregisteredPerJob: Int
    let interval: Double
    let kickoffChannel: String

    static func topic(_ number: Int) -> String { "soak:job-\(number)" }

    /// Token `index` of job `number`: 64 hex digits, the job's number first, so a token names its job.
    static func token(job number: Int, _ index: Int) -> String { String(format: "%08x%056x", number, index) }

    /// The job a token belongs to.
    static func job(ofToken token: String) -> Int? { Int(token.prefix(8), radix: 16) }

    /// Runs on the calling thread until `stop` is set.
    func run(client: GatedClient, mock: MockAPNsServer, ledger: SoakLedger, tally: SoakTally, stop: StopFlag) {
        var due = monotonicNanoseconds()
        for number in 1... {
            if stop.isSet { return }
            let topic = Self.topic(number)
            let audience = (0..<tokensPerJob).map { Self.token(job: number, $0) }
            for batch in stride(from: 0, to: audience.count, by: 1_000).map({ audience[$0..<min($0 + 1_000, audience.count)] }) {
                let items = batch.map { #"{"token":"\#($0)","kind":"push-to-start","follows":["\#(topic)"]}"# }
                let body = Array(#"{"tokens":[\#(items.joined(separator: ","))]}"#.utf8)
                guard tally.complete("POST /v1/tokens/batch", success: [201], stop: stop, {
                    client.send("POST", "/v1/tokens/batch", body: body)
                }) != nil else { return }
            }
            // Unknown at APNs from now on, so after their registration: the 410's timestamp is
            // later than it, and the gateway deactivates them.
            let unregistered = Set(audience.prefix(unregisteredPerJob))
            for token in unregistered { mock.unregister(token: token) }
            let viaKickoff = number % 2 == 1
            guard let post = post(number, topic: topic, viaKickoff: viaKickoff, client: client, tally: tally, stop: stop) else { return }
            ledger.add(SoakLedger.Job(number: number, topic: topic, viaKickoff: viaKickoff, audience: audience, unregistered: unregistered, post: post))
            due += Int64(interval * 1e9)
            sleep(untilMonotonic: due)
        }
    }

    /// Posts job `number` until it is stored or its answer is lost; nil when the run stopped first.
    private func post(_ number: Int, topic: String, viaKickoff: Bool, client: GatedClient, tally: SoakTally,
                      stop: StopFlag) -> SoakLedger.Job.Post? {
        let alert = #""alert":{"title":"Kick-off","body":"Soak job \#(number)"},"attributesType":"MatchAttributes","attributes":{"job":\#(number)}"#
        let (path, body) = viaKickoff
            ? ("/v1/channels/\(kickoffChannel)/start", #"{"audience":{"follows":"\#(topic)"},\#(alert)}"#)
            : ("/v1/personal", #"{"audience":{"follows":"\#(topic)"},"event":"start","contentState":{"seq":0},\#(alert)}"#)
        while !stop.isSet {
            let answer = client.send("POST", path, body: Array(body.utf8))
            let step = tally.judge(answer, request: "POST \(path) (job \(number))", success: [202])
            if case .lost = answer { return .lost }
            switch step {
            case .done(let response):
                guard let id = response.json?.string("jobId") else {
                    tally.violation("job \(number) answered 202 without a jobId: \(response.text.prefix(200))")
                    return .lost
                }
                return .stored(id: id)
            case .retry(let seconds):
                Thread.sleep(forTimeInterval: seconds)
            }
        }
        return nil
    }
}
