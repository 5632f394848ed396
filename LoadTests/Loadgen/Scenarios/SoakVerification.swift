import APNsMock
import Foundation
import LoadKit
import TouchlineCore

/// The figures of one check of the soak: after a restart, after the disk episode, at the end.
struct SoakCheckpoint {
    var label: String
    /// Seconds from the start of the load to the fault (or the end).
    var at: Double
    /// Kill → `/readyz` 200, for restarts.
    var restartSeconds: Double?
    /// The requests since the previous check.
    var segment: SoakTally.Segment
    var channelsChecked = 0
    /// Every event acknowledged so far on channels that must still hold them, and those of them found stored.
    var eventsAcknowledged: Int64 = 0
    var eventsVerified: Int64 = 0
    /// Events found stored whose 202 never came.
    var unacknowledgedStored: Int64 = 0
    /// Acknowledged events missing (a lost 202).
    var acknowledgedMissing: Int64 = 0
    /// Channels holding events above anything sent, or a state not that of their `lastSeq`.
    var inconsistentChannels = 0
    /// Each channel found wrong, in words.
    var eventProblems: [String] = []
    /// Channels the gateway shows in a state their acknowledged requests rule out.
    var lifeProblems: [String] = []
    var apns = SoakChannelAudit(atAPNs: [], expected: [])
    /// Seconds until the APNs channels matched the gateway's (nil: they never did).
    var apnsSettledSeconds: Double?
    var jobsPosted = 0
    var jobsDone = 0
    var devicePushesAccepted = 0
    var slowClientsCut = 0
}

/// Reads the gateway and the mock while the load is held, and compares them with the ledger.
struct SoakVerifier {
    let target: GatewayTarget
    let ledger: SoakLedger
    let mock: MockAPNsServer

    /// Every channel the gateway shows, by id (`GET /v1/channels`, pages of 1,000).
    func listChannels() throws -> [String: JSONValue] {
        let client = try HTTPLoadClient(host: target.host, port: target.port, apiKey: target.adminKey, timeout: 30)
        var channels: [String: JSONValue] = [:]
        for channel in try client.allPages("/v1/channels", member: "channels") { if let id = channel.string("id") { channels[id] = channel } }
        return channels
    }

    /// Checks every channel's events and life against the ledger, then waits up to `settle`
    /// seconds for the APNs channels to match the gateway's (a restart reconciles lost creates
    /// and finishes deletions in the background).
    func check(_ checkpoint: inout SoakCheckpoint, settle: Double) throws {
        let listed = try listChannels()
        let known = ledger.channels
        checkpoint.channelsChecked = known.count
        for (id, channel) in known.sorted(by: { $0.key < $1.key }) {
            let shown = listed[id]
            if let problem = Self.lifeProblem(channel.life, status: shown?.string("status")) { checkpoint.lifeProblems.append("\(id): \(problem)") }
            if let apnsID = shown?.string("apnsChannelId") { ledger.saw(id, apnsID: apnsID) }
            // A deleted channel's events went with it; one whose create or delete is unanswered may be gone.
            let mustExist = ![.createAsked, .deleteAsked, .deleted].contains(channel.life)
            if shown != nil || mustExist { checkpoint.eventsAcknowledged += channel.events.acknowledged }
            guard let shown else { continue }
            let audit = channel.events.audit(lastSeq: shown.integer("lastSeq") ?? -1, stateSeq: shown[member: "contentState"]?.integer("seq"))
            switch audit {
            case .consistent(let stored):
                checkpoint.eventsVerified += channel.events.acknowledged
                checkpoint.unacknowledgedStored += stored
            case .acknowledgedMissing(let count):
                checkpoint.acknowledgedMissing += count
                checkpoint.eventProblems.append(audit.describe(channel: id))
            default:
                checkpoint.inconsistentChannels += 1
                checkpoint.eventProblems.append(audit.describe(channel: id))
            }
        }
        for id in listed.keys where known[id] == nil { checkpoint.lifeProblems.append("\(id): shown by the gateway, never created") }
        let started = monotonicNanoseconds()
        var current = listed
        while true {
            checkpoint.apns = apnsAudit(current)
            let waited = Double(monotonicNanoseconds() - started) / 1e9
            if checkpoint.apns.matches { checkpoint.apnsSettledSeconds = waited }
            if checkpoint.apns.matches || waited > settle { break }
            Thread.sleep(forTimeInterval: 0.25)
            current = try listChannels()
        }
        let jobs = ledger.jobs
        checkpoint.jobsPosted = jobs.count
        let client = try HTTPLoadClient(host: target.host, port: target.port, apiKey: target.adminKey, timeout: 30)
        for job in jobs {
            guard case .stored(let id) = job.post else { continue }
            if try client.send("GET", "/v1/personal/\(id)").json?.string("status") == "done" { checkpoint.jobsDone += 1 }
        }
        checkpoint.devicePushesAccepted = mock.counters().count(endpoint: .device, status: 200)
    }

    /// The mock's channels against those the gateway shows not deleted; channels whose delete
    /// was asked without an answer yet may be on either side.
    func apnsAudit(_ listed: [String: JSONValue]) -> SoakChannelAudit {
        let expected = Set(listed.values.filter { $0.string("status") != "deleted" }.compactMap { $0.string("apnsChannelId") })
        let ambiguous = Set(ledger.channels.values.filter { $0.life == .deleteAsked }.compactMap(\.apnsID))
        return SoakChannelAudit(atAPNs: Set(mock.channels().keys), expected: expected, ambiguous: ambiguous)
    }

    /// What is wrong with a channel the provider took to `life` that the gateway shows with
    /// `status` (nil: not shown), if anything.
    static func lifeProblem(_ life: SoakLedger.Life, status: String?) -> String? {
        switch life {
        case .createAsked, .deleteAsked: return nil
        case .endAsked: return status == nil ? "its end was asked for, and the channel is gone" : nil
        case .active: return status == "active" ? nil : "created and acknowledged, shown as \(status ?? "gone")"
        case .ended:
            return ["ending", "ended", "deleted"].contains(status) ? nil : "its end was acknowledged, shown as \(status ?? "gone")"
        case .deleted: return status == nil ? nil : "deleted and acknowledged, shown as \(status!)"
        }
    }
}
