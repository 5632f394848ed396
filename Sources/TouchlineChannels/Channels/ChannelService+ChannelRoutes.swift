import APNs
import Foundation
import TouchlineAccess
import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// The provider API under `/v1`, on the ingest loop. Replies that acknowledge a change are sent
/// only after the store has committed it.
extension ChannelService: APIFeature {
    /// The channel routes: create, list, show, delete, events, end; each under `/v1` for the
    /// `default` app and under `/v1/apps/{app}` for any served app.
    package func addRoutes(to router: inout APIRouter) {
        for base in APIAccess.appRouteBases {
            router.add(.post, "\(base)/channels", scope: .anyKey) { [self] call throws(HTTPError) in try create(call) }
            router.add(.get, "\(base)/channels", scope: .anyKey) { [self] call throws(HTTPError) in try list(call) }
            router.add(.get, "\(base)/channels/{id}", scope: .channel(parameter: "id")) { [self] call throws(HTTPError) in
                call.respond(.json(status: 200, try channel(call).json(now: clock.now())))
            }
            router.add(.delete, "\(base)/channels/{id}", scope: .channel(parameter: "id")) { [self] call throws(HTTPError) in try delete(call) }
            router.add(.post, "\(base)/channels/{id}/events", scope: .channel(parameter: "id")) { [self] call throws(HTTPError) in
                postEvents(to: try call.parameters.string("id"), app: call.app, request: call.request)
            }
            router.add(.post, "\(base)/channels/{id}/end", scope: .channel(parameter: "id")) { [self] call throws(HTTPError) in
                take(.end(call.request), for: try channel(call))
            }
            router.add(.get, "\(base)/channels/{id}/events/export", scope: .channel(parameter: "id")) { [self] call throws(HTTPError) in
                try exportFeed(call)
            }
            router.add(.post, "\(base)/channels/{id}/rollover", scope: .channel(parameter: "id")) { [self] call throws(HTTPError) in
                try startRollover(call)
            }
        }
    }

    /// The channel of a ``APIScope/channel(parameter:)`` route (its key is already checked), in
    /// the path's app: 404 for an unknown id.
    package func channel(_ call: APICall, parameter: String = "id") throws(HTTPError) -> Channel {
        let id = try call.parameters.string(parameter)
        guard !id.contains("/"), let channel = channels[AppChannelID.qualified(id, app: call.app)] else {
            throw HTTPError(status: 404, code: "channel_not_found", message: "no channel with id '\(id)'")
        }
        return channel
    }

    // MARK: Channels

    private func create(_ call: APICall) throws(HTTPError) {
        let request = call.request
        let body = try RequestBody(parsing: request.body, allowed: ["id", "storagePolicy", "policy", "attributes", "alerts", "initialState",
                                                                    "recordFeed", "shadow"])
        let providerID = try body.required(body.string("id"), "id")
        guard (1...128).contains(providerID.utf8.count),
              providerID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:".contains($0)) }) else {
            throw body.invalid("id", "must be 1 to 128 characters of A-Z, a-z, 0-9, '-', '_', '.', ':'")
        }
        let app = call.app
        let id = AppChannelID.qualified(providerID, app: app)
        let key = try call.caller.requiredKey()
        try APIAccess.require(key, covers: id)
        let definition = try ChannelDefinition(body, defaultPolicy: defaultPolicy(ofApp: app), defaultAlertMode: defaultAlertMode)
        let (storage, policy, alertMode, attributes, state) = (definition.storage, definition.policy, definition.alertMode,
                                                               definition.attributes, definition.initialState)

        // A shadow channel records its feed unless told not to.
        let isShadow = try body.bool("shadow") ?? false
        let recordsFeed = try body.bool("recordFeed") ?? isShadow

        try requireWritableStore()
        guard !reconcilingApps.contains(app) else {
            throw HTTPError(status: 503, code: "reconciling", message: "the gateway is reconciling channel creates after a restart; retry shortly",
                            headers: [("Retry-After", "1")])
        }
        if let existing = channels[id] {
            // Idempotent only for the same channel: a create that asks for something else is a
            // conflict, not something to drop silently.
            let differing = [("storagePolicy", existing.storage != storage),
                             ("policy", try body.object("policy") != nil && existing.policy != policy),
                             ("attributes", attributes != nil && existing.attributes?.json != attributes?.json),
                             ("alert mode", try body.object("alerts") != nil && existing.alertMode != alertMode),
                             ("recordFeed", try body.bool("recordFeed") != nil && (existing.recording != nil) != recordsFeed),
                             ("shadow mode", existing.isShadow != isShadow)]
                .filter(\.1).map(\.0)
            guard differing.isEmpty else {
                throw HTTPError(status: 409, code: "channel_exists",
                                message: "channel '\(providerID)' exists with a different \(differing.joined(separator: " and ")); delete it first or use another id")
            }
            return lifecycle(.createRequested(request), of: existing)
        }
        try recordingLedger.admit(creating: id, isShadow: isShadow, records: recordsFeed)
        try keyQuotas.requireChannelRoom(for: key) { channelsHeld(by: key) }
        let now = clock.now()
        // The intent is durable before Apple is asked, so a lost answer can be reconciled.
        let (machine, actions) = Machine.created(for: request, rules: Channel.rules(id: id, attributes: attributes, alertMode: alertMode),
                                                 policy: policy, storage: storage, isShadow: isShadow, contentState: state,
                                                 minimumRolloverInterval: keyQuotas.settings.rolloverInterval,
                                                 jitterSeed: Channel.jitterSeed(for: id), now: now)
        let channel = Channel(id: id, storage: storage, policy: policy, attributes: attributes, alertMode: alertMode, createdAt: now,
                              recording: recordsFeed ? FeedRecording(initialState: state) : nil, isShadow: isShadow, machine: machine)
        channels[id] = channel
        recordingLedger.add(id, isShadow: isShadow, records: recordsFeed)
        perform(actions, on: channel)
    }

    /// The channels in `key`'s scope that are not deleted yet: what its `keyLimits.channels` counts
    /// (on a cluster, those of this gateway's partitions).
    func channelsHeld(by key: GatewayConfiguration.APIKey) -> Int {
        channels.values.count { APIAccess.allows(key, $0.id) && $0.status != .deleted }
    }

    /// Channels the key may see, by id, a page at a time: `?limit=` (1 to 1000, default 100) and
    /// `?after=<id>`; the answer's `next` is the `after` of the following page (absent on the last).
    private func list(_ call: APICall) throws(HTTPError) {
        let request = call.request
        let key = try call.caller.requiredKey()
        var limit = 100
        if let text = request.target.queryValue("limit") {
            guard let value = Int(text), (1...1000).contains(value) else {
                throw HTTPError(status: 400, code: "invalid_query", message: "query 'limit' must be a whole number from 1 to 1000, got \"\(text)\"")
            }
            limit = value
        }
        let after = request.target.queryValue("after")
        let app = call.app
        let now = clock.now()
        let visible = channels.values
            .filter { channel in channel.app == app && APIAccess.allows(key, channel.id) && after.map { channel.providerID > $0 } ?? true }
            .sorted { $0.providerID < $1.providerID }
        let page = visible.prefix(limit)
        var members = [JSONValue.Member("channels", .array(page.map { $0.json(now: now) }))]
        if visible.count > limit, let last = page.last { members.append(.init("next", .string(last.providerID))) }
        request.respond(.json(status: 200, .object(members)))
    }

    private func delete(_ call: APICall) throws(HTTPError) {
        let channel = try channel(call)
        for action in decide(.deleteRequested, of: channel) {
            switch action {
            case .refuseDeleteWhileCreating:
                throw HTTPError(status: 409, code: "channel_not_ready", message: "the channel is being created at APNs; delete it once that has answered")
            case .delete(let deletion):
                delete(channel, deletion, answering: call.request)
            default:
                perform(action, on: channel)
            }
        }
    }

    /// Deletes the channel's APNs channels, then its record, and answers the provider.
    private func delete(_ channel: Channel, _ deletion: Machine.Deletion, answering request: HTTPRequest) {
        let id = channel.id
        if let other = deletion.rolloverChannel {
            dispatcher(of: channel).deleteChannel(other, fence: sideEffectFence(of: channel)) { [self] result in
                if case .failure(let error) = result, error.disposition != .channelGone {
                    log.warning("deleting the rollover's APNs channel \(other) failed", channel: id, apnsID: error.requestID, error: error)
                }
            }
        }
        let forget: @Sendable () -> Void = { [self] in
            store.submit(WriteBatch([.deleteChannel(channelID: id)] + (deletion.reportsDeletion ? channelEvent(.channelDeleted, of: channel) : []))) { [self] result in
                loop.execute { [self] in
                    if case .failure(let error) = result {
                        request.respond(HTTPError.writeFailed(error, saving: "the channel's deletion").response)
                        return
                    }
                    channel.cancelTimers()
                    if channels[id] === channel {
                        channels[id] = nil
                        recordingLedger.remove(id)
                    }
                    request.respond(.json(status: 200, .object(channel.identityJSON + [.init("deleted", true)])))
                }
            }
        }
        guard let apnsID = deletion.apnsChannel else { return forget() }
        // Kickoffs into the channel are cancelled and their sends in flight answered first.
        personal(of: channel).closeKickoffs(into: apnsID) { [self] in
            dispatcher(of: channel).deleteChannel(apnsID, fence: sideEffectFence(of: channel)) { result in
                if case .failure(let error) = result, error.disposition != .channelGone {
                    request.respond(.error(status: 502, error: "apns_error", message: "APNs did not delete the channel: \(error)"))
                    return
                }
                forget()
            }
        }
    }
}
