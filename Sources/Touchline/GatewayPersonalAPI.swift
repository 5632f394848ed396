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
extension GatewayService {
    func addPersonalRoutes(to router: inout HTTPRouter) {
        router.add(.post, "/v1/personal") { [self] request, _ in personalRequest(request) { () throws(HTTPError) in try createPersonalJob(request) } }
        router.add(.get, "/v1/personal/{job}") { [self] request, parameters in
            personalRequest(request) { () throws(HTTPError) in try showPersonalJob(request, id: parameters["job"]!) }
        }
    }

    private func personalRequest(_ request: HTTPRequest, _ body: () throws(HTTPError) -> Void) {
        do throws(HTTPError) {
            guard try access.key(for: request).scope == .admin else {
                throw HTTPError(status: 403, code: "forbidden", message: "personal pushes need an admin API key")
            }
            try body()
        } catch {
            request.respond(error.response)
        }
    }

    private func createPersonalJob(_ request: HTTPRequest) throws(HTTPError) {
        let body = try GatewayRequestBody(parsing: request.body, allowed: ["audience", "event", "contentState", "alert", "attributesType",
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
        let attributesType = try body.string("attributesType")
        let attributes = try body.object("attributes")
        if event == .start {
            guard let attributesType, !attributesType.isEmpty else { throw body.invalid("attributesType", "is required for event \"start\"") }
            guard attributes != nil else { throw body.invalid("attributes", "is required for event \"start\"") }
        } else if attributesType != nil || attributes != nil {
            throw body.invalid(attributesType != nil ? "attributesType" : "attributes", "belongs to event \"start\" only")
        }
        let alert = try body.object("alert").map { (value) throws(HTTPError) -> LiveActivityAlert in
            let fields = try GatewayRequestBody(value, allowed: ["title", "body", "sound"], prefix: "alert.")
            return LiveActivityAlert(title: .plain(try fields.required(fields.string("title"), "title")),
                                     body: .plain(try fields.required(fields.string("body"), "body")), sound: try fields.string("sound"))
        }
        let priority = try body.integer("priority") ?? 10
        guard priority == 5 || priority == 10 else { throw body.invalid("priority", "must be 5 or 10, got \(priority)") }
        let expiration = try body.integer("expiration").map { (seconds: Int64) throws(HTTPError) -> UnixTime in
            guard seconds > 0 else { throw body.invalid("expiration", "must be a positive Unix time in seconds") }
            return UnixTime(seconds: seconds)
        }
        let now = clock.now()
        let payload = LiveActivityPayload(timestamp: now, event: event, contentState: contentState, alert: alert,
                                          attributesType: attributesType, attributes: attributes).encoded()
        guard payload.count <= LiveActivityPush.maximumPayloadSize else {
            throw HTTPError(status: 422, code: "payload_too_large",
                            message: "the push payload is \(payload.count) bytes; APNs takes at most \(LiveActivityPush.maximumPayloadSize)")
        }
        let record = PersonalJobRecord(id: "job-" + UUID().uuidString.lowercased(), createdAt: now,
                                       audience: String(decoding: audience.json.encoded, as: UTF8.self), payload: payload,
                                       priority: Int(priority), expiration: expiration)
        store.submit([.createJob(record)]) { [self] result in
            loop.execute { [self] in
                switch result {
                case .success:
                    request.respond(.json(status: 202, .object([.init("jobId", .string(record.id))])))
                    personal.run(record)
                case .failure(let error):
                    request.respond(.error(status: 500, error: "store_failed", message: "the job could not be saved: \(error)"))
                }
            }
        }
    }

    private func showPersonalJob(_ request: HTTPRequest, id: String) throws(HTTPError) {
        let job: PersonalJobRecord?
        do { job = try tokenReader.job(id: id) } catch {
            throw HTTPError(status: 500, code: "store_failed", message: "reading the job failed: \(error)")
        }
        guard let job else { throw HTTPError(status: 404, code: "job_not_found", message: "no personal job with id '\(id)'") }
        let counts = job.counts
        let failed = counts.failed.sorted { $0.key < $1.key }.map { JSONValue.Member($0.key, .integer($0.value)) }
        request.respond(.json(status: 200, .object([
            .init("jobId", .string(job.id)), .init("status", .string(job.status.rawValue)),
            .init("targeted", .integer(counts.targeted)), .init("sent", .integer(counts.sent)), .init("failed", .object(failed)),
            .init("expired", .integer(counts.expired)), .init("pending", .integer(counts.pending)),
        ])))
    }

    /// `{token}`, `{userId}` or `{follows}`: exactly one member.
    private static func audience(_ value: JSONValue) throws(HTTPError) -> GatewayPersonalAudience {
        let fields = try GatewayRequestBody(value, allowed: ["token", "userId", "follows"], prefix: "audience.")
        let token = try fields.string("token"), userID = try fields.string("userId"), follow = try fields.string("follows")
        switch (token, userID, follow) {
        case (let token?, nil, nil):
            return .token(try validToken(token, field: fields))
        case (nil, let userID?, nil) where !userID.isEmpty: return .userID(userID)
        case (nil, nil, let follow?) where !follow.isEmpty: return .follows(follow)
        default:
            throw HTTPError(status: 400, code: "invalid_field",
                            message: "field 'audience' must hold exactly one non-empty 'token', 'userId' or 'follows'")
        }
    }
}
