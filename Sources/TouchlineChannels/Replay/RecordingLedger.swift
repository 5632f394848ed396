import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime

/// The disk that recordings and shadow channels hold, per API key and for the gateway, against
/// their quotas (``RecordingLimits``; docs/api.md, "Recordings and shadow channels: quotas").
///
/// A channel counts against the key whose prefix covers its id in its app (the longest, when
/// several do; `admin` when no provider key does), whoever created it: the quota follows the
/// provider whose channels they are. A recording's size is the bytes of its events as posted.
///
/// - A create of a shadow channel when its key or the gateway has its most shadow channels, or
///   of a recording channel when its key or the gateway has recorded its quota of bytes, is
///   refused (409, one named error each: ``admit(creating:isShadow:records:)``).
/// - A write of a recording channel records the events that fit in what is left of both
///   quotas (``room(for:)``), reserved while the write is in the store. The first event that
///   does not fit stops the recording for good (later events are applied and pushed as usual,
///   not kept), so a recording never has a gap: it is the feed up to a point.
///
/// A value type, owned by the channel service on the ingest loop; no I/O.
package struct RecordingLedger {
    struct Entry: Equatable {
        /// The key the channel counts against (``GatewayConfiguration/APIKey/scopeLabel``).
        var owner: String
        var isShadow: Bool
        var records: Bool
        /// Bytes recorded, and reserved by a write in the store.
        var bytes = 0
        /// The recording stopped short of the feed (a quota, or ``FeedRecording/maximumEvents``).
        var stopped = false
    }

    /// What a recording may still keep of a write.
    struct Room: Equatable, Sendable {
        var events: Int
        var bytes: Int
    }

    package let limits: RecordingLimits
    /// The provider keys' scopes, by app: `(prefix, label)`, longest prefix first.
    private let prefixes: [String: [(prefix: String, label: String)]]
    private(set) var entries: [String: Entry] = [:]
    package private(set) var bytesByKey: [String: Int] = [:]
    package private(set) var totalBytes = 0
    package private(set) var shadowChannelsByKey: [String: Int] = [:]
    package private(set) var totalShadowChannels = 0
    /// Recordings stopped by a quota since the start, and creates refused by error code, for `/metrics`.
    package private(set) var stoppedByQuota = 0
    package private(set) var refusedCreates: [String: Int] = [:]

    init(limits: RecordingLimits, keys: [GatewayConfiguration.APIKey]) {
        self.limits = limits
        var prefixes: [String: [(prefix: String, label: String)]] = [:]
        for key in keys {
            guard case .channelPrefix(let prefix) = key.scope else { continue }
            prefixes[key.app, default: []].append((prefix, key.scopeLabel))
        }
        self.prefixes = prefixes.mapValues { $0.sorted { $0.prefix.count > $1.prefix.count } }
    }

    /// The key a channel (its kept id, ``AppChannelID``) counts against.
    func owner(of channelID: String) -> String {
        let (app, id) = AppChannelID.split(channelID)
        return prefixes[app]?.first { id.hasPrefix($0.prefix) }?.label ?? "admin"
    }

    // MARK: Channels

    /// Throws the refusal of a new channel that would pass a quota (counted).
    mutating func admit(creating channelID: String, isShadow: Bool, records: Bool) throws(HTTPError) {
        guard let refusal = refusal(creating: channelID, isShadow: isShadow, records: records) else { return }
        refusedCreates[refusal.code, default: 0] += 1
        throw refusal
    }

    /// The refusal of a new channel that would pass a quota; nil when it may be created.
    private func refusal(creating channelID: String, isShadow: Bool, records: Bool) -> HTTPError? {
        let owner = owner(of: channelID)
        if isShadow {
            if shadowChannelsByKey[owner, default: 0] >= limits.maxShadowChannelsPerKey {
                return HTTPError(status: 409, code: "shadow_channel_quota_exceeded",
                                 message: "the channels of key '\(owner)' include \(limits.maxShadowChannelsPerKey) shadow channels, its quota "
                                     + "(recordings.maxShadowChannelsPerKey); delete one first")
            }
            if totalShadowChannels >= limits.maxShadowChannels {
                return HTTPError(status: 409, code: "gateway_shadow_channel_quota_exceeded",
                                 message: "the gateway has \(limits.maxShadowChannels) shadow channels, its quota (recordings.maxShadowChannels); "
                                     + "delete one first")
            }
        }
        if records {
            if bytesByKey[owner, default: 0] >= limits.maxRecordedBytesPerKey {
                return HTTPError(status: 409, code: "recording_quota_exceeded",
                                 message: "the recordings of key '\(owner)' hold \(bytesByKey[owner, default: 0]) bytes, its quota of "
                                     + "\(limits.maxRecordedBytesPerKey) (recordings.maxRecordedBytesPerKey): export and delete a recording "
                                     + "first, or create the channel without \"recordFeed\"")
            }
            if totalBytes >= limits.maxRecordedBytes {
                return HTTPError(status: 409, code: "gateway_recording_quota_exceeded",
                                 message: "the gateway's recordings hold \(totalBytes) bytes, its quota of \(limits.maxRecordedBytes) "
                                     + "(recordings.maxRecordedBytes): export and delete a recording first, or create the channel without \"recordFeed\"")
            }
        }
        return nil
    }

    /// A channel created or restored, with what its recording already holds.
    mutating func add(_ channelID: String, isShadow: Bool, records: Bool, bytes: Int = 0, stopped: Bool = false) {
        remove(channelID)
        let entry = Entry(owner: owner(of: channelID), isShadow: isShadow, records: records, bytes: bytes, stopped: stopped)
        entries[channelID] = entry
        count(entry, sign: 1)
    }

    /// A channel deleted, forgotten or handed to another gateway: what it held is free again.
    mutating func remove(_ channelID: String) {
        guard let entry = entries.removeValue(forKey: channelID) else { return }
        count(entry, sign: -1)
    }

    private mutating func count(_ entry: Entry, sign: Int) {
        bytesByKey[entry.owner, default: 0] += sign * entry.bytes
        totalBytes += sign * entry.bytes
        if entry.isShadow {
            shadowChannelsByKey[entry.owner, default: 0] += sign
            totalShadowChannels += sign
        }
    }

    // MARK: Writes

    /// What the next write of a recording channel that holds `events` may record: nothing once
    /// stopped, else the events up to ``FeedRecording/maximumEvents`` and the bytes left of its
    /// key's and the gateway's quotas.
    func room(for channelID: String, events: Int) -> Room {
        guard let entry = entries[channelID], entry.records, !entry.stopped else { return Room(events: 0, bytes: 0) }
        let bytes = min(limits.maxRecordedBytesPerKey - bytesByKey[entry.owner, default: 0], limits.maxRecordedBytes - totalBytes)
        return Room(events: max(0, FeedRecording.maximumEvents - events), bytes: max(0, bytes))
    }

    /// A write in the store records `bytes`: counted now, so writes of other channels meanwhile
    /// see it.
    mutating func reserve(_ bytes: Int, for channelID: String) {
        guard var entry = entries[channelID] else { return }
        entry.bytes += bytes
        entries[channelID] = entry
        bytesByKey[entry.owner, default: 0] += bytes
        totalBytes += bytes
    }

    /// The write failed: nothing of it was recorded.
    mutating func release(_ bytes: Int, for channelID: String) {
        reserve(-bytes, for: channelID)
    }

    /// The recording left events out: it stops here for good. `byQuota` when a quota, not
    /// ``FeedRecording/maximumEvents``, stopped it.
    mutating func stop(_ channelID: String, byQuota: Bool) {
        guard var entry = entries[channelID], !entry.stopped else { return }
        entry.stopped = true
        entries[channelID] = entry
        if byQuota { stoppedByQuota += 1 }
    }
}
