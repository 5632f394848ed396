import APNs
import TouchlineAccess
import TouchlineConfiguration
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore

/// Kickoff: `POST /v1/channels/{id}/start` starts the match's Live Activity on every
/// push-to-start token following a topic, subscribed to the channel's broadcasts.
///
/// The start payload carries `input-push-channel` = the channel's APNs id, so each new activity
/// receives the channel's broadcasts from then on. It is a personal job like `POST /v1/personal`
/// (one payload encoded once, fanned out on the personal loop, answered 202 once durable), but
/// scoped like the channel's other routes: an admin key or a provider key whose prefix covers it.
///
/// With `at` (Unix seconds) the kickoff is **scheduled**: stored at once (202 means stored), it
/// waits on the personal queue until then, also across restarts; `GET /v1/channels/{id}/starts`
/// lists the channel's waiting starts and `DELETE /v1/channels/{id}/starts/{job}` cancels one
/// (``PersonalDispatcher/cancelScheduled(_:into:answer:)``; on a cluster the start waits in the
/// job bucket instead, ``PersonalJobBoard/cancelScheduled(_:into:answer:)``).
///
/// Holds the channels (the start names the channel's APNs id and takes its content-state) and
/// the job intake it shares with the other personal routes.
package struct KickoffAPI: APIFeature {
    let channels: ChannelService
    let intake: PersonalJobIntake

    package init(channels: ChannelService, intake: PersonalJobIntake) {
        self.channels = channels
        self.intake = intake
    }

    /// How far ahead a start may be scheduled: a morning's kickoffs, or a week's.
    static let longestScheduleAhead = Duration.seconds(7 * 86_400)

    /// The routes under `/v1` for the `default` app and under `/v1/apps/{app}` for any app: a
    /// kickoff reaches its channel's app's followers, through that app's personal queue.
    package func addRoutes(to router: inout APIRouter) {
        for base in APIAccess.appRouteBases {
            router.add(.post, "\(base)/channels/{id}/start", scope: .channel(parameter: "id")) { call throws(HTTPError) in
                try intake.idempotently(call, route: PersonalJobIntake.idempotentRoutes.kickoff) { claim throws(HTTPError) in
                    try startActivities(call, idempotency: claim)
                }
            }
            router.add(.get, "\(base)/channels/{id}/starts", scope: .channel(parameter: "id")) { call throws(HTTPError) in
                try listStarts(call)
            }
            router.add(.delete, "\(base)/channels/{id}/starts/{job}", scope: .channel(parameter: "id")) { call throws(HTTPError) in
                try cancelStart(call)
            }
        }
    }

    /// `{"starts": [{"jobId", "at", "audience"}]}`: the channel's kickoffs waiting for their time.
    private func listStarts(_ call: APICall) throws(HTTPError) {
        let channel = try channels.channel(call)
        let request = call.request
        guard let apnsID = channel.apnsChannelID else {
            request.respond(.json(status: 200, ["starts": []]))
            return
        }
        intake.queue(of: channel.app).scheduledStarts(into: apnsID) { records in
            let starts = records.map { record -> JSONValue in
                .object([.init("jobId", .string(record.id)), .init("at", .integer((record.startAt ?? record.createdAt).seconds)),
                         .init("audience", (try? JSONParser.parse(Array(record.audience.utf8))) ?? .null)])
            }
            request.respond(.json(status: 200, ["starts": .array(starts)]))
        }
    }

    /// Cancels a waiting start: 200 once it is stored cancelled; 409 when it no longer waits.
    private func cancelStart(_ call: APICall) throws(HTTPError) {
        let channel = try channels.channel(call)
        let request = call.request
        let jobID = try call.parameters.string("job")
        try intake.personalStore.requireWritable()
        intake.queue(of: channel.app).cancelScheduled(jobID, into: channel.apnsChannelID ?? "") { outcome in
            switch outcome {
            case .cancelled:
                request.respond(.json(status: 200, ["jobId": .string(jobID), "status": "cancelled"]))
            case .notWaiting:
                request.respond(HTTPError(status: 409, code: "start_not_waiting",
                                          message: "job '\(jobID)' is not a start into channel '\(channel.providerID)' that waits for its time "
                                              + "(it started, finished or was cancelled, or it never was one)").response)
            case .failed(let reason):
                request.respond(HTTPError(status: 503, code: "store_failed", message: "cancelling the start was not stored: \(reason)",
                                          headers: [("Retry-After", "1")]).response)
            }
        }
    }

    private func startActivities(_ call: APICall, idempotency claim: IdempotencyClaim?) throws(HTTPError) {
        let request = call.request
        let channel = try channels.channel(call)
        let channelID = channel.providerID
        guard !channel.isShadow else {
            throw HTTPError(status: 409, code: "shadow_channel",
                            message: "channel '\(channelID)' is a shadow channel: it has no APNs channel for activities to subscribe to")
        }
        guard let apnsID = channel.apnsChannelID else {
            throw HTTPError(status: 409, code: "channel_not_ready", message: "the channel is still being created at APNs")
        }
        guard channel.status == .active else {
            throw HTTPError(status: 409, code: "channel_not_active",
                            message: "channel '\(channelID)' is \(channel.status.rawValue); activities started now would subscribe to a channel that no longer updates")
        }
        let body = try RequestBody(parsing: request.body, allowed: ["audience", "attributesType", "attributes", "alert", "contentState",
                                                                           "priority", "expiration", "at"])
        let startAt = try scheduledTime(in: body)
        let audienceFields = try RequestBody(try body.required(body.object("audience"), "audience"), allowed: ["follows"], prefix: "audience.")
        let follow = try TokenRegistration.validFollow(try audienceFields.required(audienceFields.string("follows"), "follows"),
                                                    field: "follows", in: audienceFields)
        let key = try call.caller.requiredKey()
        do throws(HTTPError) {
            try FollowTopicGrants.require(key, mayAddress: follow)
        } catch {
            channels.keyQuotas.count(.followTopic, for: key)
            throw error
        }
        let attributesType = try body.required(body.string("attributesType"), "attributesType")
        guard !attributesType.isEmpty else { throw body.invalid("attributesType", "must not be empty (the app's ActivityAttributes type)") }
        let attributes = try body.required(body.object("attributes"), "attributes")
        try ContentStateLimits.require(attributes, "attributes")
        let contentState: JSONValue
        if let given = try body.object("contentState") {
            try ContentStateLimits.require(given, "contentState")
            try EventBatch.requireMatchState(given, on: channel.sports, name: "contentState")
            contentState = given
        } else {
            contentState = channel.contentState
        }
        let payload = LiveActivityPayload(timestamp: intake.clock.now(), event: .start, contentState: contentState, alert: try PersonalJobIntake.alert(in: body, requiredFor: "a kickoff's start"),
                                          attributesType: attributesType, attributes: attributes, inputPushChannel: apnsID).encoded()
        let expiration = try PersonalJobIntake.expiration(in: body)
        if let startAt, let expiration, expiration <= startAt {
            throw body.invalid("expiration", "must be after 'at' (\(startAt.seconds)): the start would expire before it begins")
        }
        var job = try intake.personalJob(audience: .follows(follow), payload: payload, priority: try PersonalJobIntake.priority(in: body),
                                         expiration: expiration, claim: claim, app: channel.app)
        job.startAt = startAt
        var answer: [JSONValue.Member] = [.init("jobId", .string(job.id))]
        if let startAt { answer.append(.init("at", .integer(startAt.seconds))) }
        try intake.personalStore.requireWritable()
        try channels.keyQuotas.takeStart(for: key, now: intake.clock.now())
        // A start sent now is the match's audience for its rollovers from its commit on; a
        // scheduled one only once its time has come and it starts (a cancelled one never is).
        let template = startAt == nil ? KickoffTemplate(payload: payload, follows: follow, priority: job.priority) : nil
        try intake.submitPersonalJobs([job], for: request, answer: .object(answer), idempotency: claim) { [channels] stored in
            if stored, let template { channels.rememberKickoff(template, into: apnsID) }
        }
    }

    /// `at`: Unix seconds in the future, at most ``longestScheduleAhead`` away; nil starts at once.
    private func scheduledTime(in body: RequestBody) throws(HTTPError) -> UnixTime? {
        guard let seconds = try body.integer("at") else { return nil }
        let now = intake.clock.now()
        let latest = now + Self.longestScheduleAhead
        guard seconds > now.seconds else {
            throw body.invalid("at", "must be in the future (Unix seconds), got \(seconds), now \(now.seconds); leave it out to start now")
        }
        guard seconds <= latest.seconds else {
            throw body.invalid("at", "must be at most 7 days ahead (\(latest.seconds)), got \(seconds)")
        }
        return UnixTime(seconds: seconds)
    }
}
