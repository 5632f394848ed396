import APNs
import Foundation
import TouchlineAccess
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Personal pushes under `/v1/personal`: one Live Activity payload fanned out to a token, a
/// user's tokens, or every push-to-start token following a topic.
///
/// Admin keys only (the audience is the app's users, not a provider's channels). The payload is
/// built and encoded here, once; the job is answered 202 once it is durable and then handed to
/// the personal loop, so the fan-out never runs on the ingest loop.
package struct PersonalAPI: APIFeature {
    let intake: PersonalJobIntake

    package init(intake: PersonalJobIntake) {
        self.intake = intake
    }

    /// The routes under `/v1` for the `default` app and under `/v1/apps/{app}` for any app:
    /// a job reaches its app's tokens through its app's connections.
    package func addRoutes(to router: inout APIRouter) {
        let scope = APIScope.admin(purpose: "personal pushes")
        for base in APIAccess.appRouteBases {
            router.add(.post, "\(base)/personal", scope: scope) { call throws(HTTPError) in
                try intake.idempotently(call, route: PersonalJobIntake.idempotentRoutes.personal) { claim throws(HTTPError) in
                    try createPersonalJob(call.request, app: call.app, idempotency: claim)
                }
            }
            router.add(.get, "\(base)/personal/{job}", scope: scope) { call throws(HTTPError) in
                showPersonalJob(call.request, id: try call.parameters.string("job"), app: call.app)
            }
        }
    }

    private func createPersonalJob(_ request: HTTPRequest, app: String, idempotency claim: IdempotencyClaim?) throws(HTTPError) {
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
        try ContentStateLimits.require(contentState, "contentState")
        let attributesType = try body.string("attributesType")
        let attributes = try body.object("attributes")
        if let attributes { try ContentStateLimits.require(attributes, "attributes") }
        if event == .start {
            guard let attributesType, !attributesType.isEmpty else { throw body.invalid("attributesType", "is required for event \"start\"") }
            guard attributes != nil else { throw body.invalid("attributes", "is required for event \"start\"") }
        } else if attributesType != nil || attributes != nil {
            throw body.invalid(attributesType != nil ? "attributesType" : "attributes", "belongs to event \"start\" only")
        }
        let alert = try PersonalJobIntake.alert(in: body, requiredFor: event == .start ? "event \"start\"" : nil)
        let priority = try PersonalJobIntake.priority(in: body), expiration = try PersonalJobIntake.expiration(in: body)
        let payload = LiveActivityPayload(timestamp: intake.clock.now(), event: event, contentState: contentState, alert: alert,
                                          attributesType: attributesType, attributes: attributes).encoded()
        let submit: @Sendable (PersonalAudience) throws(HTTPError) -> Void = { [intake] audience throws(HTTPError) in
            let job = try intake.personalJob(audience: audience, payload: payload, priority: priority, expiration: expiration, claim: claim, app: app)
            try intake.submitPersonalJobs([job], for: request, answer: .object([.init("jobId", .string(job.id))]), idempotency: claim)
        }
        switch audience {
        case .token(let token):
            intake.whenSendable(token, app: app, for: request) { () throws(HTTPError) in try submit(audience) }
        case .userID(let userID) where intake.lookups.resolvesUsersAtIntake:
            intake.resolve(userID, app: app, kind: event == .start ? .pushToStart : .update, for: request) { tokens throws(HTTPError) in
                try submit(.tokenList(tokens))
            }
        case .userID, .follows, .tokens:
            try submit(audience)
        }
    }

    private func showPersonalJob(_ request: HTTPRequest, id: String, app: String) {
        // A job on the board (a cluster's bucket) is shown from there; any other from this
        // gateway's file (on a cluster, one stored there before: a migrated one).
        intake.jobBoard.progress(of: id, answerLoop: intake.loop) { job, broken in
            if let broken {
                request.respond(Self.brokenAnswer(id, reason: broken))
                return
            }
            guard let job else {
                do throws(HTTPError) { try showStoredJob(request, id: id, app: app) } catch { request.respond(error.response) }
                return
            }
            request.respond(Self.answer(id, (job.status, job.counts), startAt: job.startAt, cancelled: job.withdrawn, slices: job.slices))
        }
    }

    /// A job of another app is not this app's to show: as unknown here.
    private func showStoredJob(_ request: HTTPRequest, id: String, app: String) throws(HTTPError) {
        if let reason = intake.brokenJobs[id] {
            // Found unusable at start: never run (docs/reliability.md).
            request.respond(Self.brokenAnswer(id, reason: reason))
            return
        }
        let job: PersonalJobSummary?
        do { job = try intake.tokenReader.jobSummary(id: id) } catch {
            throw HTTPError.readFailed(error, reading: "the job")
        }
        guard let job, job.app == app else { throw HTTPError(status: 404, code: "job_not_found", message: "no personal job with id '\(id)'") }
        request.respond(Self.answer(id, (job.status, job.counts), startAt: job.startAt, cancelled: job.wasCancelled))
    }

    /// The job as the API shows it; a scheduled one with its `startAt`, and `cancelled` when it
    /// was cancelled before its time.
    private static func answer(_ id: String, _ job: (status: PersonalJobStatus, counts: PersonalJobCounts), startAt: UnixTime? = nil,
                               cancelled: Bool = false, slices: PersonalJobView.SliceProgress? = nil) -> HTTPResponse {
        let counts = job.counts
        let failed = counts.failed.sorted { $0.key < $1.key }.map { JSONValue.Member($0.key, .integer($0.value)) }
        var members: [JSONValue.Member] = [
            .init("jobId", .string(id)), .init("status", .string(cancelled ? "cancelled" : job.status.rawValue)),
            .init("targeted", .integer(counts.targeted)), .init("sent", .integer(counts.sent)), .init("failed", .object(failed)),
            .init("expired", .integer(counts.expired)), .init("pending", .integer(counts.pending)),
        ]
        if let startAt { members.append(.init("startAt", .integer(startAt.seconds))) }
        if let slices { members.append(.init("slices", ["finished": .integer(Int64(slices.finished)), "total": .integer(Int64(slices.total))])) }
        return .json(status: 200, .object(members))
    }

    private static func brokenAnswer(_ id: String, reason: String) -> HTTPResponse {
        .json(status: 200, .object([.init("jobId", .string(id)), .init("status", "broken"), .init("brokenReason", .string(reason))]))
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
