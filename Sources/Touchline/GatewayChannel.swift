import Foundation
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// One channel as the ingest loop holds it: the engine, the content-state the reducer folds
/// into, the provider's last `seq`, and what the API shows about it.
///
/// Confined to the ingest loop (`@unchecked Sendable` only so loop jobs can capture it).
final class GatewayChannel: @unchecked Sendable {
    let id: String
    let storage: ChannelStorage
    let policy: ChannelPolicy
    /// Set for sports channels: sports events go through `SportsReducer` with these.
    let attributes: MatchAttributes?
    let createdAt: UnixTime
    /// Apple's id; nil while the create call has not answered.
    var apnsChannelID: String?
    var engine: ChannelEngine
    /// The full current content-state (also before the first push).
    var contentState: JSONValue
    /// The highest provider `seq` applied (0 before the first event).
    var lastSeq: Int64
    /// The status last written to the store.
    var persistedStatus: ChannelStatus
    /// True once the APNs channel has been deleted (after the end's grace period).
    var apnsDeleted = false
    var brokenReason: String?
    /// Requests waiting for the APNs create call (the first one and idempotent repeats).
    var createWaiters: [HTTPRequest] = []
    var timer: LoopTimer?
    /// A lost create is being matched to an APNs channel (see `reconcileLostCreates`).
    var isAdopting = false
    /// Event and end writes submitted but not yet committed: while any is out, pushes are held
    /// back, so nothing reaches APNs before it is durable.
    var uncommittedWrites = 0
    /// Pushes the engine handed out while a write was uncommitted, in order.
    var heldPushes: [ChannelEngine.OutgoingPush] = []
    /// Recent pushes and latency bookkeeping for metrics and stats.
    var activity = GatewayChannelActivity()

    init(id: String, storage: ChannelStorage, policy: ChannelPolicy, attributes: MatchAttributes?, createdAt: UnixTime,
         apnsChannelID: String?, engine: ChannelEngine, contentState: JSONValue, lastSeq: Int64, persistedStatus: ChannelStatus) {
        self.id = id
        self.storage = storage
        self.policy = policy
        self.attributes = attributes
        self.createdAt = createdAt
        self.apnsChannelID = apnsChannelID
        self.engine = engine
        self.contentState = contentState
        self.lastSeq = lastSeq
        self.persistedStatus = persistedStatus
    }

    /// The status the API shows and the store keeps, derived from the engine's phase.
    var status: ChannelStatus {
        guard apnsChannelID != nil else { return .creating }
        if apnsDeleted { return .deleted }
        switch engine.phase {
        case .live: return .active
        case .ending: return .ending
        case .ended, .closed: return .ended
        case .broken: return .broken
        }
    }

    /// A different seed per channel, so channels throttled together do not retry together (FNV-1a).
    static func jitterSeed(for id: String) -> UInt64 {
        id.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    // MARK: Saved form

    /// What the record's `policyJSON` holds: the channel's policy and, for sports channels, its
    /// match attributes (both fixed at creation).
    var settingsJSON: String {
        var members = [JSONValue.Member("policy", .raw(Self.encodedJSON(policy)))]
        if let attributes { members.append(.init("attributes", attributes.json)) }
        return String(decoding: JSONValue.object(members).encoded, as: UTF8.self)
    }

    /// The record to insert before the APNs create call.
    var creationRecord: ChannelRecord {
        ChannelRecord(id: id, storagePolicy: storage, policyJSON: settingsJSON, status: .creating, createdAt: createdAt,
                      contentState: contentState.encoded, engineSnapshot: Self.encodedJSON(engine.snapshot))
    }

    /// The state update that saves everything that changes while the channel lives.
    func stateUpdate(at now: UnixTime) -> ChannelStateUpdate {
        ChannelStateUpdate(channelID: id, updatedAt: now, contentState: contentState.encoded, lastSeq: lastSeq,
                           lastSentState: engine.lastSentState, engineSnapshot: Self.encodedJSON(engine.snapshot),
                           countersJSON: String(decoding: Self.encodedJSON(engine.counters), as: UTF8.self))
    }

    /// Rebuilds a channel from its record; throws a message naming the broken part.
    convenience init(record: ChannelRecord, now: UnixTime) throws {
        let settings = try JSONParser.parse(Array(record.policyJSON.utf8))
        let policy = try settings[member: "policy"].map { try JSONDecoder().decode(ChannelPolicy.self, from: Data($0.encoded)) } ?? .default
        let attributes = try settings[member: "attributes"].map { (value) throws in try MatchAttributes(json: value) }
        let engine: ChannelEngine
        if let saved = record.engineSnapshot {
            let snapshot = try JSONDecoder().decode(ChannelEngine.Snapshot.self, from: Data(saved))
            engine = ChannelEngine(policy: policy, storage: record.storagePolicy, snapshot: snapshot)
        } else {
            engine = ChannelEngine(policy: policy, storage: record.storagePolicy, jitterSeed: Self.jitterSeed(for: record.id), now: now)
        }
        self.init(id: record.id, storage: record.storagePolicy, policy: policy, attributes: attributes, createdAt: record.createdAt,
                  apnsChannelID: record.apnsChannelID, engine: engine, contentState: try JSONParser.parse(record.contentState),
                  lastSeq: record.lastSeq, persistedStatus: record.status)
        apnsDeleted = record.status == .deleted
        if record.status == .broken { brokenReason = "APNs reports the channel as not registered (ChannelNotRegistered)" }
    }

    // MARK: API view

    /// The channel as `GET /v1/channels/{id}` shows it.
    func json(now: UnixTime) -> JSONValue {
        var members: [JSONValue.Member] = [
            .init("id", .string(id)),
            .init("apnsChannelId", apnsChannelID.map(JSONValue.string) ?? .null),
            .init("storagePolicy", .string(storage.rawValue)),
            .init("status", .string(status.rawValue)),
            .init("policy", .raw(Self.encodedJSON(policy))),
        ]
        if let attributes { members.append(.init("attributes", attributes.json)) }
        members += [
            .init("contentState", contentState),
            .init("lastSeq", .integer(lastSeq)),
            .init("pushInFlight", .bool(engine.hasPushInFlight)),
            .init("priorityBudgetRemaining", .integer(Int64(engine.priorityBudgetRemaining(now: now)))),
            .init("counters", .raw(Self.encodedJSON(engine.counters))),
        ]
        if let brokenReason { members.append(.init("brokenReason", .string(brokenReason))) }
        return .object(members)
    }

    /// JSON of a Codable value with sorted keys (the types encoded here cannot fail).
    static func encodedJSON<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array((try? encoder.encode(value)) ?? Data("null".utf8))
    }
}
