import TouchlineAccess
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Dead letters under `/v1/deadletters`: the targets of personal jobs that failed for good
/// (a bad token, a configuration problem, retries run out), for support to list and replay.
///
/// Admin keys only. Tokens are shown whole here (they are the registry's own data, and support
/// needs them to find the device) but never logged. A replay is one commit: the new jobs and the
/// `replayed` marks of their dead letters land together or not at all.
///
/// On the ingest loop (`@unchecked Sendable` only so route closures can capture it).
package final class DeadLettersAPI: APIFeature, @unchecked Sendable {
    private let intake: PersonalJobIntake
    /// This gateway's instance name on a cluster (nil on a gateway of its own): a replay may name
    /// the gateway holding its letters (`gateway`), which must then be this one (the cluster
    /// node hands it here: `ClusterNode.route`).
    private let instance: String?
    /// Dead letters of replays whose commit is still out: a second replay of any of them is
    /// refused until the first has committed (then the store shows them `replayed`).
    private var beingReplayed: Set<Int64> = []

    package init(intake: PersonalJobIntake, instance: String? = nil) {
        self.intake = intake
        self.instance = instance
    }

    /// Dead letters one replay takes at most.
    static let maximumReplay = 10_000

    package func addRoutes(to router: inout APIRouter) {
        let scope = APIScope.admin(purpose: "dead letters")
        router.add(.get, "/v1/deadletters", scope: scope) { [self] call throws(HTTPError) in try listDeadLetters(call.request) }
        router.add(.post, "/v1/deadletters/replay", scope: scope) { [self] call throws(HTTPError) in
            try intake.idempotently(call, route: PersonalJobIntake.idempotentRoutes.replay) { claim throws(HTTPError) in
                try replayDeadLetters(call.request, idempotency: claim)
            }
        }
    }

    // MARK: Listing

    /// In id order (oldest first), a page at a time: `?limit=` (1 to 1000, default 100) and
    /// `?after=<id>`; the answer's `next` is the `after` of the following page (absent on the
    /// last). Filters: `status` (dead | replayed), `jobId`, `reason`.
    private func listDeadLetters(_ request: HTTPRequest) throws(HTTPError) {
        let target = request.target
        let limit = try Self.integerQuery(target, "limit", in: 1...1000) ?? 100
        let after = try Self.integerQuery(target, "after", in: 0...Int64.max) ?? 0
        var status: DeadLetterStatus?
        if let name = target.queryValue("status") {
            guard let parsed = DeadLetterStatus(rawValue: name) else {
                throw HTTPError(status: 400, code: "invalid_query", message: "query 'status' must be \"dead\" or \"replayed\", got \"\(name)\"")
            }
            status = parsed
        }
        let jobID = try Self.textQuery(target, "jobId"), reason = try Self.textQuery(target, "reason")
        // One row more than asked tells whether another page follows.
        let rows = try intake.stored("dead letters") { () throws(StoreError) in
            try intake.tokenReader.deadLetters(status: status, jobID: jobID, reason: reason, after: after, limit: Int(limit) + 1)
        }
        let page = rows.prefix(Int(limit))
        var members = [JSONValue.Member("deadLetters", .array(page.map(Self.json)))]
        if rows.count > page.count, let last = page.last { members.append(.init("next", .integer(last.id))) }
        request.respond(.json(status: 200, .object(members)))
    }

    private static func json(_ letter: DeadLetterRecord) -> JSONValue {
        .object([
            .init("id", .integer(letter.id)), .init("jobId", .string(letter.jobID)), .init("token", .string(letter.token)),
            .init("reason", .string(letter.reason)), .init("failedAt", .integer(letter.at.seconds)),
            .init("status", .string(letter.status.rawValue)),
        ])
    }

    private static func integerQuery(_ target: HTTPRequestTarget, _ name: String, in range: ClosedRange<Int64>) throws(HTTPError) -> Int64? {
        guard let text = target.queryValue(name) else { return nil }
        guard let value = Int64(text), range.contains(value) else {
            let bounds = range.upperBound == .max ? "at least \(range.lowerBound)" : "from \(range.lowerBound) to \(range.upperBound)"
            throw HTTPError(status: 400, code: "invalid_query", message: "query '\(name)' must be a whole number \(bounds), got \"\(text)\"")
        }
        return value
    }

    private static func textQuery(_ target: HTTPRequestTarget, _ name: String) throws(HTTPError) -> String? {
        guard let text = target.queryValue(name) else { return nil }
        guard !text.isEmpty else { throw HTTPError(status: 400, code: "invalid_query", message: "query '\(name)' must not be empty") }
        return text
    }

    // MARK: Replay

    /// Body: `{"ids": [...]}` or a filter `{"jobId"?, "reason"?, "limit"?}` (at least one of
    /// `jobId` and `reason`; the filter takes dead letters still `dead`, oldest first), plus
    /// `expiration` for jobs whose own has passed. Each original job gets one new job whose
    /// audience is the list of its selected tokens, with the original payload and priority.
    ///
    /// Letters already replayed are refused when named by id (409 `already_replayed`, nothing
    /// applied) and never taken by a filter, so no letter is replayed twice.
    private func replayDeadLetters(_ request: HTTPRequest, idempotency claim: IdempotencyClaim?) throws(HTTPError) {
        let body = try RequestBody(parsing: request.body, allowed: ["ids", "jobId", "reason", "limit", "expiration", "gateway"])
        if let gateway = try body.string("gateway"), gateway != instance {
            throw body.invalid("gateway", instance == nil ? "names a gateway of a cluster; this gateway is not part of one"
                                                          : "names gateway \"\(gateway.prefix(64))\", not this one (\(instance!)), and no live gateway of the cluster has that name")
        }
        let now = intake.clock.now()
        let newExpiration = try PersonalJobIntake.expiration(in: body)
        if let newExpiration, newExpiration <= now {
            throw body.invalid("expiration", "must be in the future (Unix seconds), got \(newExpiration.seconds)")
        }
        let letters = try selectedDeadLetters(body)
        let ids = letters.map(\.id)
        let busy = ids.filter(beingReplayed.contains)
        guard busy.isEmpty else {
            throw HTTPError(status: 409, code: "replay_in_progress",
                            message: "dead letters \(Self.listed(busy)) are being replayed by another request; list them again once it has answered")
        }
        var jobs: [PersonalJobRecord] = []
        var summary: [JSONValue] = []
        for (originalID, group) in Dictionary(grouping: letters, by: \.jobID).sorted(by: { $0.key < $1.key }) {
            guard let original = try intake.stored("the job \(originalID)", { () throws(StoreError) in try intake.tokenReader.job(id: originalID) }) else {
                throw HTTPError(status: 409, code: "original_job_missing",
                                message: "dead letters \(Self.listed(group.map(\.id))) belong to job '\(originalID)', which the store no longer has")
            }
            var expiration = original.expiration
            if let passed = expiration, passed <= now {
                guard let newExpiration else {
                    throw HTTPError(status: 409, code: "job_expired",
                                    message: "job '\(originalID)' expired at \(passed.seconds) (Unix seconds); give a new 'expiration' to replay its dead letters")
                }
                expiration = newExpiration
            }
            let job = try intake.personalJob(audience: .tokenList(group.map(\.token)), payload: original.payload, priority: original.priority,
                                             expiration: expiration, claim: claim, index: jobs.count, app: original.app)
            jobs.append(job)
            summary.append(.object([.init("jobId", .string(job.id)), .init("replayOf", .string(originalID)),
                                    .init("deadLetters", .integer(Int64(group.count)))]))
        }
        try intake.personalStore.requireWritable()
        beingReplayed.formUnion(ids)
        let answer = JSONValue.object([.init("replayed", .integer(Int64(ids.count))), .init("jobs", .array(summary))])
        try intake.submitPersonalJobs(jobs, with: [.markReplayed(ids: ids)], for: request, answer: answer, idempotency: claim) { [self] _ in
            beingReplayed.subtract(ids)
        }
    }

    /// The dead letters the body selects: by `ids` (every one must exist and still be `dead`)
    /// or by filter (those still `dead`; at least one must match).
    private func selectedDeadLetters(_ body: RequestBody) throws(HTTPError) -> [DeadLetterRecord] {
        let jobID = try body.string("jobId"), reason = try body.string("reason")
        if let value = body.value("ids") {
            guard jobID == nil, reason == nil, body.value("limit") == nil else {
                throw body.invalid("ids", "selects dead letters by id; it cannot be combined with 'jobId', 'reason' or 'limit'")
            }
            let ids = try Self.replayIDs(value, body)
            let letters = try intake.stored("dead letters") { () throws(StoreError) in try intake.tokenReader.deadLetters(ids: ids) }
            let found = Set(letters.map(\.id))
            let unknown = ids.filter { !found.contains($0) }
            guard unknown.isEmpty else {
                throw HTTPError(status: 404, code: "dead_letter_not_found", message: "no dead letters with ids \(Self.listed(unknown))")
            }
            let replayed = letters.filter { $0.status == .replayed }.map(\.id)
            guard replayed.isEmpty else {
                throw HTTPError(status: 409, code: "already_replayed",
                                message: "dead letters \(Self.listed(replayed)) were replayed already; nothing was replayed (leave them out and try again)")
            }
            return letters
        }
        guard jobID != nil || reason != nil else {
            throw HTTPError(status: 400, code: "missing_selector",
                            message: "say which dead letters to replay: 'ids', or a filter with 'jobId' and/or 'reason'")
        }
        if jobID?.isEmpty == true { throw body.invalid("jobId", "must not be empty") }
        if reason?.isEmpty == true { throw body.invalid("reason", "must not be empty") }
        let limit = try body.integer("limit") ?? Int64(Self.maximumReplay)
        guard (1...Int64(Self.maximumReplay)).contains(limit) else {
            throw body.invalid("limit", "must be from 1 to \(Self.maximumReplay), got \(limit)")
        }
        let selection = DeadLetterSelection(jobID: jobID, reason: reason, limit: Int(limit))
        let letters = try intake.stored("dead letters") { () throws(StoreError) in try intake.tokenReader.deadLetters(selectedBy: selection) }
        guard !letters.isEmpty else {
            let filter = [jobID.map { "jobId '\($0)'" }, reason.map { "reason '\($0)'" }].compactMap { $0 }.joined(separator: " and ")
            throw HTTPError(status: 404, code: "dead_letter_not_found",
                            message: "no dead letters with status 'dead' match \(filter) (replayed letters are not replayed again)")
        }
        return letters
    }

    /// `ids`: 1 to ``maximumReplay`` positive integers; repeats count once.
    private static func replayIDs(_ value: JSONValue, _ body: RequestBody) throws(HTTPError) -> [Int64] {
        guard case .array(let items) = value, !items.isEmpty else { throw body.invalid("ids", "must be a non-empty array of dead-letter ids") }
        guard items.count <= maximumReplay else {
            throw body.invalid("ids", "holds \(items.count) ids; a replay takes at most \(maximumReplay), split it")
        }
        var ids: Set<Int64> = []
        for item in items {
            guard case .integer(let id) = item, id > 0 else { throw body.invalid("ids", "must hold positive integers (dead-letter ids)") }
            ids.insert(id)
        }
        return ids.sorted()
    }

    /// Up to ten ids for a message, then how many more.
    private static func listed(_ ids: [Int64]) -> String {
        let shown = ids.prefix(10).map(String.init).joined(separator: ", ")
        return ids.count > 10 ? "\(shown) and \(ids.count - 10) more" : shown
    }


}
