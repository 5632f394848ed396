import APNs
import TouchlineCore
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
/// Holds the channels (the start names the channel's APNs id and takes its content-state) and
/// the job intake it shares with the other personal routes.
struct KickoffAPI: APIFeature {
    let channels: ChannelService
    let intake: PersonalJobIntake

    func addRoutes(to router: inout APIRouter) {
        router.add(.post, "/v1/channels/{id}/start", scope: .channel(parameter: "id")) { call throws(HTTPError) in
            try intake.idempotently(call, route: PersonalJobIntake.idempotentRoutes.kickoff) { claim throws(HTTPError) in
                try startActivities(call, idempotency: claim)
            }
        }
    }

    private func startActivities(_ call: APICall, idempotency claim: IdempotencyClaim?) throws(HTTPError) {
        let request = call.request
        let channel = try channels.channel(call)
        let channelID = channel.id
        guard let apnsID = channel.apnsChannelID else {
            throw HTTPError(status: 409, code: "channel_not_ready", message: "the channel is still being created at APNs")
        }
        guard channel.status == .active else {
            throw HTTPError(status: 409, code: "channel_not_active",
                            message: "channel '\(channelID)' is \(channel.status.rawValue); activities started now would subscribe to a channel that no longer updates")
        }
        let body = try RequestBody(parsing: request.body, allowed: ["audience", "attributesType", "attributes", "alert", "contentState",
                                                                           "priority", "expiration"])
        let audienceFields = try RequestBody(try body.required(body.object("audience"), "audience"), allowed: ["follows"], prefix: "audience.")
        let follow = try TokenRegistration.validFollow(try audienceFields.required(audienceFields.string("follows"), "follows"),
                                                    field: "follows", in: audienceFields)
        let attributesType = try body.required(body.string("attributesType"), "attributesType")
        guard !attributesType.isEmpty else { throw body.invalid("attributesType", "must not be empty (the app's ActivityAttributes type)") }
        let attributes = try body.required(body.object("attributes"), "attributes")
        try EventBatch.requireWithinLimits(attributes, "attributes")
        let contentState: JSONValue
        if let given = try body.object("contentState") {
            try EventBatch.requireWithinLimits(given, "contentState")
            try EventBatch.requireMatchState(given, on: channel.sports, name: "contentState")
            contentState = given
        } else {
            contentState = channel.contentState
        }
        let payload = LiveActivityPayload(timestamp: intake.clock.now(), event: .start, contentState: contentState, alert: try PersonalJobIntake.alert(in: body, requiredFor: "a kickoff's start"),
                                          attributesType: attributesType, attributes: attributes, inputPushChannel: apnsID).encoded()
        let job = try intake.personalJob(audience: .follows(follow), payload: payload, priority: try PersonalJobIntake.priority(in: body),
                                         expiration: try PersonalJobIntake.expiration(in: body), claim: claim)
        try intake.submitPersonalJobs([job], for: request, answer: .object([.init("jobId", .string(job.id))]), idempotency: claim)
    }
}
