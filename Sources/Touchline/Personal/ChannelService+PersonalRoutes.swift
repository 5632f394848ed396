import APNs
import Foundation
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Personal pushes under `/v1/personal`: one Live Activity payload fanned out to a token, a
/// user's tokens, or every push-to-start token following a topic.
///
/// Admin keys only (the audience is the app's users, not a provider's channels). The payload is
/// built and encoded here, once; the job is answered 202 once it is durable and then handed to
/// the personal loop, so the fan-out never runs on the ingest loop.
extension ChannelService {
    func addPersonalRoutes(to router: inout APIRouter) {
        let scope = APIScope.admin(purpose: "personal pushes")
        router.add(.post, "/v1/personal", scope: scope) { [self] call throws(HTTPError) in
            try idempotently(call, route: Self.idempotentRoutes.personal) { claim throws(HTTPError) in
                try createPersonalJob(call.request, idempotency: claim)
            }
        }
        router.add(.get, "/v1/personal/{job}", scope: scope) { [self] call throws(HTTPError) in
            try showPersonalJob(call.request, id: try call.parameters.string("job"))
        }
    }

    private func createPersonalJob(_ request: HTTPRequest, idempotency claim: IdempotencyClaim?) throws(HTTPError) {
        let body = try RequestBody(parsing: request.body, allowed: ["audience", "event", "contentState", "alert", "attributesType",
                                                                           "attributes", "priority", "expiration"])
        let audience = try Self.audience(try body.required(body.object("audience"), "audience"))
        let eventName = try body.required(body.string("event"), "event")
        guard let event = LiveActivityPayload.Event(rawValue: eventName) else {
            throw body.invalid("event", "must be \"start\", \"update\" or \"end\", got \"\(eventName)\"")
        }
        if case .follows = audience, event != .start {
            throw body.invalid("audience", "'follows' selects push-to-start tokens, so it needs event \"start\"")
        }
        let contentState = try body.required(body.object("contentState"), "contentState")
        try EventBatch.requireWithinLimits(contentState, "contentState")
        let attributesType = try body.string("attributesType")
        let attributes = try body.object("attributes")
        if let attributes { try EventBatch.requireWithinLimits(attributes, "attributes") }
        if event == .start {
            guard let attributesType, !attributesType.isEmpty else { throw body.invalid("attributesType", "is required for event \"start\"") }
            guard attributes != nil else { throw body.invalid("attributes", "is required for event \"start\"") }
        } else if attributesType != nil || attributes != nil {
            throw body.invalid(attributesType != nil ? "attributesType" : "attributes", "belongs to event \"start\" only")
        }
        let alert = try Self.alert(in: body, requiredFor: event == .start ? "event \"start\"" : nil)
        let priority = try Self.priority(in: body), expiration = try Self.expiration(in: body)
        let payload = LiveActivityPayload(timestamp: clock.now(), event: event, contentState: contentState, alert: alert,
                                          attributesType: attributesType, attributes: attributes).encoded()
        let job = try personalJob(audience: audience, payload: payload, priority: priority, expiration: expiration)
        try submitPersonalJobs([job], for: request, answer: .object([.init("jobId", .string(job.id))]), idempotency: claim)
    }

    // MARK: Shared by every route that creates personal jobs

    /// `alert` (`{title, body, sound?}`): title and body of 1 to 256 characters, sound of 1 to
    /// 64. Required when `requiredFor` names why (APNs refuses a start without an alert).
    static func alert(in body: RequestBody, requiredFor reason: String? = nil) throws(HTTPError) -> LiveActivityAlert? {
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
    static func priority(in body: RequestBody) throws(HTTPError) -> Int {
        let priority = try body.integer("priority") ?? 10
        guard priority == 5 || priority == 10 else { throw body.invalid("priority", "must be 5 or 10, got \(priority)") }
        return Int(priority)
    }

    /// `expiration`: a positive Unix time in seconds, when given.
    static func expiration(in body: RequestBody) throws(HTTPError) -> UnixTime? {
        try body.integer("expiration").map { (seconds: Int64) throws(HTTPError) -> UnixTime in
            guard seconds > 0 else { throw body.invalid("expiration", "must be a positive Unix time in seconds") }
            return UnixTime(seconds: seconds)
        }
    }

    /// A new job (not saved yet) for an encoded payload, refused when APNs would refuse the payload.
    func personalJob(audience: PersonalAudience, payload: [UInt8], priority: Int, expiration: UnixTime?) throws(HTTPError) -> PersonalJobRecord {
        guard payload.count <= LiveActivityPush.maximumPayloadSize else {
            throw HTTPError(status: 422, code: "payload_too_large",
                            message: "the push payload is \(payload.count) bytes; APNs takes at most \(LiveActivityPush.maximumPayloadSize)")
        }
        return PersonalJobRecord(id: "job-" + UUID().uuidString.lowercased(), createdAt: clock.now(),
                                 audience: String(decoding: audience.json.encoded, as: UTF8.self), payload: payload,
                                 priority: priority, expiration: expiration)
    }

    /// Saves `jobs` and `operations` in one commit (all or nothing), then answers 202 with
    /// `answer` and hands the jobs to the personal queue; a failed commit answers 503 (500 when the store
    /// refused the write itself) and runs nothing. With an idempotency `claim`, its record (the
    /// 202 and `answer`) is in the same commit. `settled` runs on the ingest loop once the commit has succeeded or failed.
    func submitPersonalJobs(_ jobs: [PersonalJobRecord], with operations: [TokenOperation] = [], for request: HTTPRequest,
                            answer: JSONValue, idempotency claim: IdempotencyClaim? = nil,
                            settled: (@Sendable () -> Void)? = nil) throws(HTTPError) {
        try requireWritableStore(personalStore)
        let kept = claim.map { holdIdempotencyKey($0, status: 202, answer: answer) } ?? []
        personalStore.submit(jobs.map(TokenOperation.createJob) + operations + kept) { [self] result in
            if case .success = result { idempotentCommitSucceeded(claim) }
            loop.execute { [self] in
                if let claim { idempotencyKeys.inFlight.remove(claim.slot) }
                settled?()
                switch result {
                case .success:
                    request.respond(.json(status: 202, answer))
                    for job in jobs { personal.run(job) }
                case .failure(let error):
                    request.respond(HTTPError.writeFailed(error, saving: "the job").response)
                }
            }
        }
    }

    private func showPersonalJob(_ request: HTTPRequest, id: String) throws(HTTPError) {
        if let reason = brokenJobs[id] {
            // Found unusable at start: never run (docs/reliability.md).
            request.respond(.json(status: 200, .object([.init("jobId", .string(id)), .init("status", "broken"),
                                                        .init("brokenReason", .string(reason))])))
            return
        }
        let job: (status: PersonalJobStatus, counts: PersonalJobCounts)?
        do { job = try tokenReader.jobProgress(id: id) } catch {
            throw HTTPError(status: 500, code: "store_failed", message: "reading the job failed: \(error)")
        }
        guard let job else { throw HTTPError(status: 404, code: "job_not_found", message: "no personal job with id '\(id)'") }
        let counts = job.counts
        let failed = counts.failed.sorted { $0.key < $1.key }.map { JSONValue.Member($0.key, .integer($0.value)) }
        request.respond(.json(status: 200, .object([
            .init("jobId", .string(id)), .init("status", .string(job.status.rawValue)),
            .init("targeted", .integer(counts.targeted)), .init("sent", .integer(counts.sent)), .init("failed", .object(failed)),
            .init("expired", .integer(counts.expired)), .init("pending", .integer(counts.pending)),
        ])))
    }

    /// `{token}`, `{userId}` or `{follows}`: exactly one member.
    private static func audience(_ value: JSONValue) throws(HTTPError) -> PersonalAudience {
        let fields = try RequestBody(value, allowed: ["token", "userId", "follows"], prefix: "audience.")
        let token = try fields.string("token"), userID = try fields.string("userId"), follow = try fields.string("follows")
        switch (token, userID, follow) {
        case (let token?, nil, nil):
            return .token(try TokenRegistration.validToken(token, field: fields))
        case (nil, let userID?, nil): return .userID(try TokenRegistration.validUserID(userID, field: "userId", in: fields))
        case (nil, nil, let follow?): return .follows(try TokenRegistration.validFollow(follow, field: "follows", in: fields))
        default:
            throw HTTPError(status: 400, code: "invalid_field",
                            message: "field 'audience' must hold exactly one non-empty 'token', 'userId' or 'follows'")
        }
    }
}
