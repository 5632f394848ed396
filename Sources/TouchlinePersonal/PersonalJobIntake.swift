import APNs
import Foundation
import TouchlineAccess
import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime
import Synchronization
import TouchlineStore

/// How every route that creates personal jobs (`POST /v1/personal`, kickoffs, dead-letter
/// replays) turns a request into durable jobs: the shared fields (`alert`, `priority`,
/// `expiration`), the payload-size check, the commit with its `Idempotency-Key`, the 202, and
/// the hand-off to the personal queue.
///
/// On the ingest loop (`@unchecked Sendable` only so store completions can capture it).
package final class PersonalJobIntake: @unchecked Sendable {
    package let loop: EventLoop
    package let clock: any WallClock
    /// Tokens, personal jobs and dead letters: a file and writer thread of their own, so that
    /// personal writes never queue in front of a channel's commit.
    package let personalStore: any PersonalStoreWriter
    /// Reads of the gateway's file (jobs, dead letters, idempotency records); on the ingest loop only.
    let tokenReader: any PersonalStoreReader
    /// Where a token is looked up (``TokenLookups``); on the ingest loop only.
    let lookups: any TokenLookups
    /// Every app's personal queue, by app (each runs its app's jobs through its own pool, on the
    /// personal loop); handed a job once it is durable.
    let queues: PerApp<PersonalDispatcher>
    /// `Idempotency-Key`s of the job-creating routes: settings and the keys being committed.
    package let idempotencyKeys: IdempotencyKeys
    /// Where new jobs are stored and run: this gateway's file and queues on its own, the
    /// cluster's job bucket on a cluster (the backend's ``PersonalJobBoard``).
    let jobBoard: any PersonalJobBoard
    /// Stored personal jobs the personal queue found unusable at start, with the reason
    /// (reported once it has read them): shown by `GET /v1/personal/{job}` and `/metrics`.
    package var brokenJobs: [String: String] = [:]

    package init(loop: EventLoop, clock: any WallClock, personalStore: any PersonalStoreWriter, tokenReader: any PersonalStoreReader,
         lookups: any TokenLookups, queues: PerApp<PersonalDispatcher>, jobBoard: any PersonalJobBoard = OwnJobs(), idempotency: IdempotencySettings) {
        self.jobBoard = jobBoard
        self.loop = loop
        self.clock = clock
        self.personalStore = personalStore
        self.tokenReader = tokenReader
        self.lookups = lookups
        self.queues = queues
        idempotencyKeys = IdempotencyKeys(settings: idempotency)
    }

    /// `alert` (`{title, body, sound?}`): title and body of 1 to 256 characters, sound of 1 to
    /// 64. Required when `requiredFor` names why (APNs refuses a start without an alert).
    package static func alert(in body: RequestBody, requiredFor reason: String? = nil) throws(HTTPError) -> LiveActivityAlert? {
        guard let value = try body.object("alert") else {
            if let reason { throw body.invalid("alert", "is required for \(reason) (APNs starts no Live Activity without one)") }
            return nil
        }
        let fields = try RequestBody(value, allowed: ["title", "body", "sound"], prefix: "alert.")
        func text(_ name: String, maximum: Int) throws(HTTPError) -> String? {
            guard let text = try fields.string(name) else { return nil }
            guard (1...maximum).contains(text.count) else { throw fields.invalid(name, "must be 1 to \(maximum) characters") }
            return text
        }
        return LiveActivityAlert(title: .plain(try fields.required(text("title", maximum: 256), "title")),
                                 body: .plain(try fields.required(text("body", maximum: 256), "body")),
                                 sound: try text("sound", maximum: 64))
    }

    /// `priority`: 5 or 10, default 10.
    package static func priority(in body: RequestBody) throws(HTTPError) -> Int {
        let priority = try body.integer("priority") ?? 10
        guard priority == 5 || priority == 10 else { throw body.invalid("priority", "must be 5 or 10, got \(priority)") }
        return Int(priority)
    }

    /// `expiration`: a positive Unix time in seconds, when given.
    package static func expiration(in body: RequestBody) throws(HTTPError) -> UnixTime? {
        try body.integer("expiration").map { (seconds: Int64) throws(HTTPError) -> UnixTime in
            guard seconds > 0 else { throw body.invalid("expiration", "must be a positive Unix time in seconds") }
            return UnixTime(seconds: seconds)
        }
    }

    /// The personal queue of `app` (a job runs in its app's queue, through its app's pool).
    package func queue(of app: String) -> PersonalDispatcher { queues[app] }

    /// Hands a durable job to its app's personal queue.
    func run(_ job: PersonalJobRecord) { queue(of: job.app).run(job) }

    /// Runs `proceed` once `token` is known to be sendable through `app`, or answers `request`
    /// 422 `token_of_another_app` when it is registered for another app: sent through `app`'s
    /// connections, with its topic, APNs would refuse it, and a token must never be pushed
    /// through another app. An unregistered token is sent as given. What `proceed` throws is
    /// the answer (on the ingest loop, at once or once the lookup answered).
    func whenSendable(_ token: String, app: String, for request: HTTPRequest, _ proceed: @escaping @Sendable () throws(HTTPError) -> Void) {
        lookups.token(token) { found in
            do throws(HTTPError) {
                let record: TokenRecord?
                do throws(StoreError) { record = try found.get() } catch {
                    throw HTTPError.readFailed(error, reading: "the token")
                }
                if let record, record.app != app {
                    throw HTTPError(status: 422, code: "token_of_another_app",
                                    message: "token \(token.prefix(8))… is registered for app '\(record.app)', not '\(app)': it is pushed through its own app only")
                }
                try proceed()
            } catch {
                request.respond(error.response)
            }
        }
    }

    /// A user's tokens a job resolved at intake reaches at most (``TokenLookups/resolvesUsersAtIntake``).
    static let resolvedUserTokenLimit = 1_000

    /// Runs `proceed` with the active tokens of `kind` that `userID` has registered for `app`,
    /// as a job walking a user's tokens would read them; a failed lookup answers `request`
    /// (``HTTPError/readFailed(_:reading:)``). What `proceed` throws is the answer.
    func resolve(_ userID: String, app: String, kind: TokenKind, for request: HTTPRequest,
                 _ proceed: @escaping @Sendable ([String]) throws(HTTPError) -> Void) {
        lookups.tokens(userID: userID, app: app, limit: Self.resolvedUserTokenLimit) { found in
            do throws(HTTPError) {
                let records: [TokenRecord]
                do throws(StoreError) { records = try found.get() } catch {
                    throw HTTPError.readFailed(error, reading: "the user's tokens")
                }
                try proceed(records.filter { $0.active && $0.kind == kind }.map(\.token))
            } catch {
                request.respond(error.response)
            }
        }
    }

    /// A new job (not saved yet) for an encoded payload, refused when APNs would refuse the payload.
    /// Its id is random, or on a cluster, for a request with an `Idempotency-Key` (`claim`), the
    /// `index`th id derived from the key (``IdempotencyClaim/jobID(index:)``).
    package func personalJob(audience: PersonalAudience, payload: [UInt8], priority: Int, expiration: UnixTime?,
                     claim: IdempotencyClaim?, index: Int = 0, app: String = AppChannelID.defaultApp) throws(HTTPError) -> PersonalJobRecord {
        guard payload.count <= LiveActivityPush.maximumPayloadSize else {
            throw HTTPError(status: 422, code: "payload_too_large",
                            message: "the push payload is \(payload.count) bytes; APNs takes at most \(LiveActivityPush.maximumPayloadSize)")
        }
        let id = jobBoard.namesJobsByKey ? claim?.jobID(index: index) : nil
        return PersonalJobRecord(id: id ?? "job-" + UUID().uuidString.lowercased(), createdAt: clock.now(),
                                 audience: String(decoding: audience.json.encoded, as: UTF8.self), payload: payload,
                                 priority: priority, expiration: expiration, app: app)
    }

    /// Stores a rollover's start jobs on the job board, each once, and runs them; `completion`
    /// on the loop with whether they are all stored.
    package func storeRolloverStarts(_ jobs: [PersonalJobRecord], completion: @escaping @Sendable (Bool) -> Void) {
        jobBoard.storeRolloverStarts(jobs, through: self, completion: completion)
    }

    /// ``storeRolloverStarts(_:completion:)`` on a gateway on its own: the jobs in one commit to
    /// this gateway's file, leaving out those whose id is stored already (a restart in the
    /// middle of a rollover).
    func storeRolloverStartsInFile(_ jobs: [PersonalJobRecord], completion: @escaping @Sendable (Bool) -> Void) {
        let new = jobs.filter { (try? tokenReader.job(id: $0.id)) == nil }
        guard !new.isEmpty else { return completion(true) }
        personalStore.submit(new.map(TokenOperation.createJob)) { [self] result in
            loop.execute { [self] in
                guard case .success = result else { return completion(false) }
                for job in new { run(job) }
                completion(true)
            }
        }
    }

    /// Saves `jobs` and `operations` in one commit (all or nothing), then answers 202 with
    /// `answer` and hands the jobs to the personal queue; a failed commit answers 503 (500 when the store
    /// refused the write itself) and runs nothing. With an idempotency `claim`, its record (the
    /// 202 and `answer`) is in the same commit. `settled` runs on the ingest loop once the commit has succeeded or failed,
    /// told whether the jobs are stored (and will run).
    package func submitPersonalJobs(_ jobs: [PersonalJobRecord], with operations: [TokenOperation] = [], for request: HTTPRequest,
                            answer: JSONValue, idempotency claim: IdempotencyClaim? = nil,
                            settled: (@Sendable (_ stored: Bool) -> Void)? = nil) throws(HTTPError) {
        try personalStore.requireWritable()
        let kept = claim.map { holdIdempotencyKey($0, status: 202, answer: answer) } ?? []
        jobBoard.store(jobs, then: operations + kept, through: self, for: request, answer: answer, idempotency: claim, settled: settled)
    }

    /// ``submitPersonalJobs(_:with:for:answer:idempotency:settled:)`` on a gateway on its own:
    /// `jobs` and `operations` (the idempotency record among them) in one commit to this
    /// gateway's file, then the 202 and the jobs handed to their queues.
    func commitToFile(_ jobs: [PersonalJobRecord], with operations: [TokenOperation], for request: HTTPRequest, answer: JSONValue,
                      idempotency claim: IdempotencyClaim?, settled: (@Sendable (_ stored: Bool) -> Void)?) {
        personalStore.submit(jobs.map(TokenOperation.createJob) + operations) { [self] result in
            if case .success = result { idempotentCommitSucceeded(claim) }
            loop.execute { [self] in
                if let claim { idempotencyKeys.inFlight.remove(claim.slot) }
                let stored = if case .success = result { true } else { false }
                settled?(stored)
                switch result {
                case .success:
                    request.respond(.json(status: 202, answer))
                    for job in jobs { run(job) }
                case .failure(let error):
                    request.respond(HTTPError.writeFailed(error, saving: "the job").response)
                }
            }
        }
    }

    // MARK: Idempotency-Key

    package static let idempotentRoutes = (personal: "POST /v1/personal", kickoff: "POST /v1/channels/{id}/start",
                                   replay: "POST /v1/deadletters/replay")

    /// Runs `body` (a route that creates personal jobs) under the request's `Idempotency-Key`,
    /// once its API key is known (401 otherwise): without one, as is; with one already stored for the same
    /// request, answers the stored answer instead; with one stored for another request, 422;
    /// with one whose request is still being committed, 409. Otherwise `body` gets the claim to
    /// commit with its jobs (``submitPersonalJobs(_:with:for:answer:idempotency:settled:)``).
    /// `route` is the `default` app's; an app's keys are its own (the route under its path), so
    /// one key sent to two apps makes two jobs.
    package func idempotently(_ call: APICall, route defaultRoute: String,
                      _ body: (IdempotencyClaim?) throws(HTTPError) -> Void) throws(HTTPError) {
        let route = call.app == AppChannelID.defaultApp ? defaultRoute
            : defaultRoute.replacingOccurrences(of: " /v1/", with: " /v1/apps/\(call.app)/")
        let request = call.request
        let key = try call.caller.requiredKey()
        guard let clientKey = try IdempotencyClaim.clientKey(in: request.head.fields) else { return try body(nil) }
        let claim = IdempotencyClaim(slot: .init(scope: IdempotencyClaim.scope(of: key), route: route, key: clientKey),
                                            requestHash: IdempotencyClaim.requestHash(of: request))
        guard !idempotencyKeys.inFlight.contains(claim.slot) else { throw IdempotencyClaim.inUse(claim) }
        let stored: IdempotencyRecord?
        do {
            stored = try tokenReader.idempotencyRecord(scope: claim.slot.scope, route: route, key: clientKey, at: clock.now())
        } catch {
            throw HTTPError.readFailed(error, reading: "the Idempotency-Key's record")
        }
        guard let stored else { return try body(claim) }
        request.respond(try IdempotencyClaim.replay(status: stored.status, response: stored.response,
                                                    sameRequest: stored.requestHash == claim.requestHash, for: claim))
    }

    /// The operations that keep `claim` with a request's jobs (answered `status` with
    /// `answer`), and a bounded prune of expired records; marks the key in flight.
    func holdIdempotencyKey(_ claim: IdempotencyClaim, status: Int, answer: JSONValue) -> [TokenOperation] {
        let now = clock.now()
        idempotencyKeys.inFlight.insert(claim.slot)
        return [.pruneIdempotencyKeys(expiredBy: now, limit: IdempotencySettings.prunedPerRequest),
                .rememberIdempotencyKey(claim.record(status: status, response: answer, at: now, lifetime: idempotencyKeys.settings.keyLifetime))]
    }

    /// The commit of `claim` has succeeded (on the writer's thread): with the test hook set, the
    /// process ends here, before the answer is written.
    package func idempotentCommitSucceeded(_ claim: IdempotencyClaim?) {
        guard claim != nil, idempotencyKeys.settings.exitAfterCommit else { return }
        _exit(86)
    }

    /// A read of the registry on the ingest loop; a failure is answered naming `what` (``HTTPError/readFailed(_:reading:)``).
    func stored<T>(_ what: String, _ read: () throws(StoreError) -> T) throws(HTTPError) -> T {
        do { return try read() } catch {
            throw HTTPError.readFailed(error, reading: what)
        }
    }
}
