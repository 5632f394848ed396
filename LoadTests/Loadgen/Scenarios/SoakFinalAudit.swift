import APNsMock
import Foundation
import LoadKit
import TouchlineCore

/// The soak's last checks, after the load stopped and the last restart is long past: every
/// personal job done with exact counts and its tokens reached, every end and delete finished at
/// APNs, and exactly one APNs channel per live gateway channel.
struct SoakFinalAudit {
    struct JobRow {
        var job: SoakLedger.Job
        /// The stored job: from its 202, or found through its dead letters after a lost answer.
        var id: String?
        var counts: SoakJobAudit.Counts?
        var audit: SoakJobAudit
    }

    var jobs: [JobRow] = []
    /// Jobs the gateway ran that match no post: a second job for one audience.
    var unmatchedJobs: [String] = []
    /// Seconds from the end of the load until the personal queue was idle (nil: it never was).
    var jobsSettledSeconds: Double?
    var endedChannels = 0
    var endedGone = 0
    var deletedChannels = 0
    var deletedGone = 0
    var deletionProblems: [String] = []
    var apns = SoakChannelAudit(atAPNs: [], expected: [])
    /// At the mock: channels created, deleted, and the list-all calls of reconciliations.
    var creates = 0
    var deletes = 0
    var lists = 0

    init(verifier: SoakVerifier, timeout: Double) throws {
        let target = verifier.target, ledger = verifier.ledger, mock = verifier.mock
        let client = try HTTPLoadClient(host: target.host, port: target.port, apiKey: target.adminKey, timeout: 30)
        jobsSettledSeconds = try Self.waitForIdlePersonalQueue(client, jobs: ledger.jobs, timeout: timeout)
        let found = try Self.jobsNamedByDeadLetters(client)
        let stored = Set(ledger.jobs.compactMap { job -> String? in if case .stored(let id) = job.post { return id } else { return nil } })
        var devices: (accepted: [String: Int], gone: [String: Int]) = ([:], [:])
        for request in mock.recordedRequests() where request.endpoint == .device {
            guard let token = request.deviceToken?.lowercased() else { continue }
            if request.status == 200 { devices.accepted[token, default: 0] += 1 }
            if request.status == 410 { devices.gone[token, default: 0] += 1 }
        }
        for job in ledger.jobs {
            var id: String?
            switch job.post {
            case .stored(let stored): id = stored
            case .lost: id = found.first { $0.value == job.number }?.key
            }
            let counts = try id.map { try Self.counts(of: $0, client) }
            jobs.append(JobRow(job: job, id: id, counts: counts,
                               audit: SoakJobAudit(audience: job.audience, unregistered: job.unregistered, counts: counts,
                                                   accepted: devices.accepted, gone: devices.gone)))
        }
        let matched = Set(jobs.compactMap(\.id))
        unmatchedJobs = found.keys.filter { !matched.contains($0) && !stored.contains($0) }.sorted()
        try checkDeletions(verifier, timeout: timeout)
        apns = verifier.apnsAudit(try verifier.listChannels())
        let counters = mock.counters()
        creates = counters.count(endpoint: .createChannel, status: 201)
        deletes = counters.count(endpoint: .deleteChannel, status: 204)
        lists = counters.count(endpoint: .listChannels, status: 200)
    }

    /// Waits until every stored job is done and the queue runs nothing (jobs whose post was lost
    /// included); returns how long that took.
    private static func waitForIdlePersonalQueue(_ client: HTTPLoadClient, jobs: [SoakLedger.Job], timeout: Double) throws -> Double? {
        let started = monotonicNanoseconds()
        while Double(monotonicNanoseconds() - started) / 1e9 < timeout {
            let stats = try client.send("GET", "/v1/stats").json?[member: "personal"]
            var idle = stats?.integer("jobsRunning") == 0 && stats?.integer("targetsPending") == 0
            for job in jobs where idle {
                if case .stored(let id) = job.post { idle = try counts(of: id, client).status == "done" }
            }
            if idle { return Double(monotonicNanoseconds() - started) / 1e9 }
            Thread.sleep(forTimeInterval: 0.25)
        }
        return nil
    }

    /// Every job some dead letter names, with the job number its token belongs to.
    private static func jobsNamedByDeadLetters(_ client: HTTPLoadClient) throws -> [String: Int] {
        var jobs: [String: Int] = [:]
        for letter in try client.allPages("/v1/deadletters", member: "deadLetters") {
            if let id = letter.string("jobId"), let number = letter.string("token").flatMap(SoakPersonalTraffic.job(ofToken:)) { jobs[id] = number }
        }
        return jobs
    }

    static func counts(of id: String, _ client: HTTPLoadClient) throws -> SoakJobAudit.Counts {
        let response = try client.send("GET", "/v1/personal/\(id)")
        guard response.status == 200, let job = response.json, let status = job.string("status"), case .object(let failures)? = job[member: "failed"] else {
            throw LoadError("GET /v1/personal/\(id) answered \(response.status): \(response.text.prefix(200))")
        }
        var failed: [String: Int] = [:]
        for failure in failures { if case .integer(let count) = failure.value { failed[failure.name] = Int(count) } }
        func count(_ name: String) -> Int { Int(job.integer(name) ?? -1) }
        return .init(status: status, targeted: count("targeted"), sent: count("sent"), failed: failed, expired: count("expired"), pending: count("pending"))
    }

    /// Waits until every ended channel is deleted at APNs (their grace period is one second),
    /// then checks that neither they nor the deleted channels are left at the mock.
    private mutating func checkDeletions(_ verifier: SoakVerifier, timeout: Double) throws {
        let channels = verifier.ledger.channels
        let ended = channels.filter { $0.value.life == .ended }, deleted = channels.filter { $0.value.life == .deleted }
        (endedChannels, deletedChannels) = (ended.count, deleted.count)
        let started = monotonicNanoseconds()
        var listed = try verifier.listChannels()
        while ended.keys.contains(where: { listed[$0]?.string("status") != "deleted" }), Double(monotonicNanoseconds() - started) / 1e9 < timeout {
            Thread.sleep(forTimeInterval: 0.25)
            listed = try verifier.listChannels()
        }
        let atAPNs = Set(verifier.mock.channels().keys)
        for (id, channel) in ended.sorted(by: { $0.key < $1.key }) {
            let status = listed[id]?.string("status")
            if status == "deleted", let apnsID = channel.apnsID, !atAPNs.contains(apnsID) {
                endedGone += 1
            } else {
                let stillAtAPNs = channel.apnsID.map(atAPNs.contains) == true ? ", still at APNs" : ""
                deletionProblems.append("\(id): ended, shown as \(status ?? "gone")\(stillAtAPNs)")
            }
        }
        for (id, channel) in deleted.sorted(by: { $0.key < $1.key }) {
            if listed[id] == nil, let apnsID = channel.apnsID, !atAPNs.contains(apnsID) {
                deletedGone += 1
            } else {
                deletionProblems.append("\(id): deleted, \(listed[id] == nil ? "still at APNs" : "still shown by the gateway")")
            }
        }
    }
}
