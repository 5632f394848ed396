import Foundation
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore

/// One channel as the ingest loop holds it: its machine (the engine, the content-state the
/// reducer folds into, the provider's last `seq`, its life at APNs, the gate, the rollover and
/// the feed watch), the settings fixed at its creation, the loop timers of the machine's
/// deadlines, and the bookkeeping of its recording and activity.
///
/// Confined to the ingest loop (`@unchecked Sendable` only so loop jobs can capture it).
package final class Channel: @unchecked Sendable {
    package let id: String
    /// The app the channel belongs to (``AppChannelID``), read from its id once: every push asks.
    package let app: String
    let storage: ChannelStorage
    let policy: ChannelPolicy
    /// Set for sports channels: sports events go through `SportsReducer` with these.
    package let attributes: MatchAttributes?
    /// How the reducer writes the alerts it composes (fixed at creation).
    let alertMode: AlertMode
    package let createdAt: UnixTime
    /// Set on a channel that records its feed for export and replay (`recordFeed`).
    let recording: FeedRecording?
    /// A shadow channel (`shadow`) computes its pushes and sends none: no APNs channel, every
    /// push accepted at once by the gateway itself (see `ChannelService+Shadow.swift`).
    let isShadow: Bool
    /// Events the recording holds (at most ``FeedRecording/maximumEvents``), and their bytes.
    var recordedEvents = 0
    var recordedBytes = 0
    /// The recording left an accepted event out (its quota, or ``FeedRecording/maximumEvents``)
    /// and keeps nothing more: it is the feed up to there (``RecordingLedger``).
    var recordingStopped = false
    /// The audiences a rollover starts again: the latest kickoff per follow topic.
    var kickoffs: [KickoffTemplate] = []
    /// The channel's rules: its engine, its life at APNs, the commit gate, the rollover, the
    /// feed watch and the ownership fence, composed (``ChannelMachine``). Its actions are
    /// performed by ``ChannelService/handle(_:of:)``.
    var machine: Machine
    /// The loop timers that fire the machine's deadlines, one per kind.
    var timers: [Machine.Timer: LoopTimer] = [:]
    /// A fire-and-forget save of the state or status failed: it is made again once the store
    /// takes writes (see `ChannelService.retryFailedSaves`).
    var needsSave = false
    /// Webhook events of a failed save, written (with the same event ids) by the next save.
    var unsavedWebhookEvents: [StoreOperation] = []
    /// Budget downgrades already looked at for the `channel.budget_exhausted` event, and when
    /// the last such event was recorded (see `ChannelService+WebhookFacts.swift`).
    var downgradesSeen: Int
    var budgetExhaustedReportedAt: UnixTime?
    /// Recent pushes and latency bookkeeping for metrics and stats.
    package var activity = ChannelActivity()

    typealias Machine = ChannelMachine<ChannelRules>

    init(id: String, storage: ChannelStorage, policy: ChannelPolicy, attributes: MatchAttributes?, alertMode: AlertMode, createdAt: UnixTime,
         recording: FeedRecording? = nil, isShadow: Bool = false, machine: Machine) {
        self.id = id
        app = AppChannelID.app(of: id)
        self.storage = storage
        self.policy = policy
        self.attributes = attributes
        self.alertMode = alertMode
        self.createdAt = createdAt
        self.recording = recording
        self.isShadow = isShadow
        self.machine = machine
        downgradesSeen = machine.engine.counters.budgetDowngrades
    }

    /// The rules a channel's requests are validated with.
    static func rules(id: String, attributes: MatchAttributes?, alertMode: AlertMode) -> ChannelRules {
        ChannelRules(channelID: id, sports: attributes.map { SportsChannel(attributes: $0, alertMode: alertMode) })
    }

    // MARK: The machine's state

    package var engine: ChannelEngine { machine.state.engine }
    var lifecycle: ChannelLifecycle<HTTPRequest> { machine.lifecycle }
    var rollover: ActivityRollover { machine.rollover }
    /// Whether the provider's feed still comes (`feedStallSeconds`).
    package var feed: FeedWatch { machine.feed }
    /// The full current content-state (also before the first push).
    var contentState: JSONValue { machine.state.contentState }
    /// The highest provider `seq` applied (0 before the first event).
    var lastSeq: Int64 { machine.state.lastSeq }
    var brokenReason: String? { machine.brokenReason }

    /// The rules of a sports channel's events; nil on other channels.
    var sports: SportsChannel? { machine.rules.sports }

    /// True while the match is live, when a silent feed counts as stalled (``ChannelMachine/isFeedLive``).
    var isFeedLive: Bool { machine.isFeedLive }

    /// Stops every timer of the channel (deleted, let go).
    func cancelTimers() {
        for timer in timers.values { timer.cancel() }
    }

    /// Apple's id, once saved.
    package var apnsChannelID: String? { machine.apnsChannelID }
    /// Set when the stored record could not be used at start: the channel is shown as broken
    /// with this reason and takes nothing but a delete, while every other channel is served.
    package var damage: String? { machine.damage }

    /// The status the API shows and the store keeps, derived from the engine's phase.
    package var status: ChannelStatus { machine.status }

    /// A different seed per channel, so channels throttled together do not retry together (FNV-1a).
    static func jitterSeed(for id: String) -> UInt64 {
        id.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    // MARK: Saved form

    /// What the record's `policyJSON` holds: the channel's policy, its alert mode, for sports
    /// channels its match attributes, when it records its feed the state before its first
    /// event, and whether it is a shadow channel (all fixed at creation); then the rollover and
    /// the kickoffs' audiences, which change (saved with ``settingsUpdate(at:)``). A record
    /// written before alert modes existed has none: its alerts stay text.
    var settingsJSON: String {
        var members = [JSONValue.Member("policy", policy.json), .init("alerts", alertsJSON)]
        if let attributes { members.append(.init("attributes", attributes.json)) }
        if let recording { members.append(.init("recording", recording.json)) }
        if isShadow { members.append(.init("shadow", .bool(true))) }
        members.append(.init("rollover", .raw(Self.encodedJSON(rollover))))
        if !kickoffs.isEmpty { members.append(.init("kickoffs", .array(kickoffs.map(\.json)))) }
        return String(decoding: JSONValue.object(members).encoded, as: UTF8.self)
    }

    /// The record to insert before the APNs create call.
    var creationRecord: ChannelRecord {
        ChannelRecord(id: id, storagePolicy: storage, policyJSON: settingsJSON, status: .creating, createdAt: createdAt,
                      contentState: contentState.encoded, engineSnapshot: engine.snapshot.encodedJSON)
    }

    /// The update that saves the settings (the rollover and the kickoffs' audiences change).
    func settingsUpdate(at now: UnixTime) -> ChannelStateUpdate {
        ChannelStateUpdate(channelID: id, updatedAt: now, policyJSON: settingsJSON)
    }

    /// The state update that saves everything that changes while the channel lives.
    func stateUpdate(at now: UnixTime) -> ChannelStateUpdate {
        Self.stateUpdate(id: id, engine: engine, contentState: contentState, lastSeq: lastSeq, at: now)
    }

    /// The state update for a channel in the given state (a write's state before it is applied).
    static func stateUpdate(id: String, engine: ChannelEngine, contentState: JSONValue, lastSeq: Int64, at now: UnixTime) -> ChannelStateUpdate {
        ChannelStateUpdate(channelID: id, updatedAt: now, contentState: contentState.encoded, lastSeq: lastSeq,
                           lastSentState: engine.lastSentState, engineSnapshot: engine.snapshot.encodedJSON,
                           countersJSON: String(decoding: engine.counters.encodedJSON, as: UTF8.self))
    }

    /// Rebuilds a channel from its record, or, when the record cannot be used, a damaged
    /// channel that names the broken part.
    /// `rolloverInterval` is the least time between two rollovers (`keyLimits.rolloverIntervalSeconds`).
    static func restored(from record: ChannelRecord, rolloverInterval: Duration, now: UnixTime) -> Channel {
        do {
            return try Channel(record: record, rolloverInterval: rolloverInterval, now: now)
        } catch {
            let damage = "the stored record cannot be read: \(error)"
            let lifecycle = ChannelLifecycle<HTTPRequest>.restored(apnsChannelID: record.apnsChannelID, status: record.status, damage: damage,
                                                                   jitterSeed: jitterSeed(for: record.id))
            let state = ChannelMachineState(engine: ChannelEngine(storage: record.storagePolicy, jitterSeed: jitterSeed(for: record.id), now: now),
                                            contentState: .object([]), lastSeq: record.lastSeq)
            let machine = Machine(rules: rules(id: record.id, attributes: nil, alertMode: .text), policy: .default, isShadow: false,
                                  minimumRolloverInterval: rolloverInterval, state: state, lifecycle: lifecycle,
                                  rollover: ActivityRollover(generationStartedAt: record.createdAt), persistedStatus: .broken,
                                  brokenReason: damage, hasAudience: false, watchingFrom: record.createdAt, ownership: .acting(fence: nil))
            return Channel(id: record.id, storage: record.storagePolicy, policy: .default, attributes: nil, alertMode: .text,
                           createdAt: record.createdAt, machine: machine)
        }
    }

    /// Rebuilds a channel from its record; throws a message naming the broken part. Everything
    /// is validated as the API validates it, so a restored channel can take its next event.
    private convenience init(record: ChannelRecord, rolloverInterval: Duration, now: UnixTime) throws {
        func part<T>(_ name: String, _ read: () throws -> T) throws -> T {
            do { return try read() } catch { throw GatewayError.startup("\(name): \(error)") }
        }
        if let unreadable = record.unreadable { throw GatewayError.startup(unreadable) }
        let settings = try part("its settings") { try JSONParser.parse(Array(record.policyJSON.utf8)) }
        let policy = try part("its policy") { try settings[member: "policy"].map { (value) throws in try ChannelPolicy(json: value) } ?? .default }
        let attributes = try part("its match attributes") { try settings[member: "attributes"].map { (value) throws in try MatchAttributes(json: value) } }
        let alertMode = try part("its alert mode") { try settings[member: "alerts"].map { (value) throws in try AlertMode(json: value) } ?? .text }
        let recording = try part("its feed recording") { try settings[member: "recording"].map { (value) throws in try FeedRecording(json: value) } }
        let rollover = try part("its rollover") { () throws -> ActivityRollover? in
            try settings[member: "rollover"].map { (value) throws in try JSONDecoder().decode(ActivityRollover.self, from: Data(value.encoded)) }
        }
        let kickoffs = try part("its kickoffs") { () throws -> [KickoffTemplate] in
            guard let value = settings[member: "kickoffs"] else { return [] }
            guard case .array(let items) = value, items.count <= KickoffTemplate.maximumAudiences else {
                throw GatewayError.startup("must be an array of at most \(KickoffTemplate.maximumAudiences) kickoffs")
            }
            return try items.map { (item) throws in try KickoffTemplate(json: item) }
        }
        let isShadow = try part("its shadow mode") { () throws -> Bool in
            switch settings[member: "shadow"] {
            case nil: return false
            case .bool(let flag)?: return flag
            default: throw GatewayError.startup("must be true or false")
            }
        }
        let engine = try part("its engine snapshot") { () throws -> ChannelEngine in
            guard let saved = record.engineSnapshot else {
                return ChannelEngine(policy: policy, storage: record.storagePolicy, jitterSeed: Self.jitterSeed(for: record.id), now: now)
            }
            return ChannelEngine(policy: policy, storage: record.storagePolicy,
                                 snapshot: try JSONDecoder().decode(ChannelEngine.Snapshot.self, from: Data(saved)))
        }
        let contentState = try part("its content-state") { () throws -> JSONValue in
            let state = try JSONParser.parse(record.contentState)
            guard case .object = state else { throw GatewayError.startup("is not a JSON object") }
            try ContentStateLimits.check(state)
            if let attributes { _ = try SportsChannel(attributes: attributes).validated(state: state) }
            return state
        }
        guard (0...EventBatch.maximumSeq).contains(record.lastSeq) else {
            throw GatewayError.startup("its last seq \(record.lastSeq) is outside 0...\(EventBatch.maximumSeq)")
        }
        let lifecycle = ChannelLifecycle<HTTPRequest>.restored(apnsChannelID: record.apnsChannelID, status: record.status, damage: nil,
                                                               jitterSeed: Self.jitterSeed(for: record.id))
        // The time of events before the restart is not kept: the feed's silence counts from the restart.
        let machine = Machine(rules: Self.rules(id: record.id, attributes: attributes, alertMode: alertMode), policy: policy, isShadow: isShadow,
                              minimumRolloverInterval: rolloverInterval,
                              state: ChannelMachineState(engine: engine, contentState: contentState, lastSeq: record.lastSeq),
                              lifecycle: lifecycle, rollover: rollover ?? ActivityRollover(generationStartedAt: record.createdAt),
                              persistedStatus: record.status,
                              brokenReason: record.status == .broken ? ChannelEngine.Action.channelNotRegisteredReason : nil,
                              hasAudience: !kickoffs.isEmpty, watchingFrom: now, ownership: .acting(fence: nil))
        self.init(id: record.id, storage: record.storagePolicy, policy: policy, attributes: attributes, alertMode: alertMode, createdAt: record.createdAt,
                  recording: recording, isShadow: isShadow, machine: machine)
        self.kickoffs = kickoffs
    }

    // MARK: API view

    /// The id the provider gave the channel, without its app.
    var providerID: String { AppChannelID.split(id).id }

    /// The channel's id and, for an app other than `default`, its app: how the API names it.
    var identityJSON: [JSONValue.Member] { [.init("id", .string(providerID))] + AppChannelID.member(naming: app) }

    /// The channel as `GET /v1/channels/{id}` shows it.
    func json(now: UnixTime) -> JSONValue {
        var members: [JSONValue.Member] = identityJSON + [
            .init("apnsChannelId", apnsChannelID.map(JSONValue.string) ?? .null),
            .init("storagePolicy", .string(storage.rawValue)),
            .init("status", .string(status.rawValue)),
            .init("policy", policy.json),
            .init("alerts", alertsJSON),
            .init("recordFeed", .bool(recording != nil)),
            .init("shadow", .bool(isShadow)),
        ]
        if let attributes { members.append(.init("attributes", attributes.json)) }
        if recording != nil {
            members.append(.init("recording", ["events": .integer(Int64(recordedEvents)), "limit": .integer(Int64(FeedRecording.maximumEvents)),
                                               "bytes": .integer(Int64(recordedBytes)), "stopped": .bool(recordingStopped)]))
        }
        members.append(.init("rollover", rolloverJSON))
        members += [
            .init("contentState", contentState),
            .init("lastSeq", .integer(lastSeq)),
            .init("pushInFlight", .bool(engine.hasPushInFlight)),
            .init("priorityBudgetRemaining", .integer(Int64(engine.priorityBudgetRemaining(now: now)))),
            .init("counters", .raw(engine.counters.encodedJSON)),
        ]
        members.append(.init("feed", feedJSON))
        if let brokenReason { members.append(.init("brokenReason", .string(brokenReason))) }
        return .object(members)
    }

    /// The feed watch as the API shows it: `stalled`, `watching` (live and watched) or `idle`.
    var feedJSON: JSONValue {
        let state = feed.isStalled ? "stalled" : feed.stallDeadline(live: isFeedLive) != nil ? "watching" : "idle"
        var members: [JSONValue.Member] = [.init("state", .string(state)), .init("lastEventAt", .integer(feed.lastEventAt.seconds))]
        if let since = feed.stalledSince { members.append(.init("stalledSince", .integer(since.seconds))) }
        members += [.init("stalls", .integer(Int64(feed.stalls))), .init("gaps", .integer(Int64(feed.gaps)))]
        if let gap = feed.lastGap { members.append(.init("lastGap", ["from": .integer(gap.from), "to": .integer(gap.to)])) }
        return .object(members)
    }

    /// The rollover as the API shows it: the current APNs channel's generation, the step under
    /// way, when the next is due, and the follow topics the kickoffs gave it to start again.
    var rolloverJSON: JSONValue {
        let stage: String = switch rollover.stage {
        case .live: "live"
        case .creatingSuccessor: "creatingSuccessor"
        case .switching: "switching"
        case .startingAudience: "startingAudience"
        case .endingPrevious: "endingPrevious"
        case .deletingPrevious: "deletingPrevious"
        }
        var members: [JSONValue.Member] = [.init("generation", .integer(Int64(rollover.generation))), .init("stage", .string(stage)),
                                           .init("generationStartedAt", .integer(rollover.generationStartedAt.seconds))]
        if let due = rollover.due(maximumAge: policy.maximumActivityAge) { members.append(.init("dueAt", .integer(due.seconds))) }
        if let previous = rollover.previousChannel { members.append(.init("previousApnsChannelId", .string(previous))) }
        members.append(.init("audiences", .array(kickoffs.map { .string($0.follows) })))
        return .object(members)
    }

    /// `{"mode": "localized"}`: as the API takes and shows it.
    var alertsJSON: JSONValue { ["mode": .string(alertMode.rawValue)] }

    /// JSON of a Codable value with sorted keys (the types encoded here cannot fail).
    static func encodedJSON<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array((try? encoder.encode(value)) ?? Data("null".utf8))
    }
}
