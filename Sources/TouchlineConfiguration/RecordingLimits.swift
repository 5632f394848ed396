import TouchlineCore

/// The bounds on feed exports, recordings and shadow channels (`recordings` in the file,
/// `TOUCHLINE_RECORDINGS` or `--recordings`, one JSON object; docs/configuration.md, "Exports
/// and recordings").
///
/// An export holds a thread and a connection for as long as its client reads; a recording and
/// a shadow channel hold disk for as long as the channel lives, and a shadow channel needs no
/// APNs channel, so Apple's channel limit does not bound them. Each is bounded per API key
/// (the key whose prefix covers the channel; `admin` for channels no provider key covers) and
/// for the whole gateway.
public struct RecordingLimits: Sendable, Equatable {
    /// Exports running at once in the whole gateway: the export pool's threads. One more is
    /// 503 `exports_busy` with `Retry-After`.
    public var maxConcurrentExports = 4
    /// Exports one key runs at once. One more is 429 `too_many_exports` with `Retry-After`.
    public var maxExportsPerKey = 2
    /// Bytes of recorded events (each event's body as posted) the whole gateway keeps.
    public var maxRecordedBytes = 8 << 30
    /// Bytes of recorded events the channels of one key keep.
    public var maxRecordedBytesPerKey = 1 << 30
    /// Shadow channels in the whole gateway.
    public var maxShadowChannels = 1_000
    /// Shadow channels of one key.
    public var maxShadowChannelsPerKey = 100
    public init() {}

    private static let names = ["maxConcurrentExports", "maxExportsPerKey", "maxRecordedBytes", "maxRecordedBytesPerKey",
                                "maxShadowChannels", "maxShadowChannelsPerKey"]

    /// Settings from JSON; every member is optional and checked against its range.
    init(json value: JSONValue) throws(InvalidConfigurationValue) {
        self.init()
        let members = try ConfigurationMembers.members(of: value, allowed: Self.names, path: nil)
        let terabyte = 1 << 40
        maxConcurrentExports = try ConfigurationMembers.integer(members, "maxConcurrentExports", 1...256) ?? maxConcurrentExports
        maxExportsPerKey = try ConfigurationMembers.integer(members, "maxExportsPerKey", 1...256) ?? maxExportsPerKey
        maxRecordedBytes = try ConfigurationMembers.integer(members, "maxRecordedBytes", 0...terabyte) ?? maxRecordedBytes
        maxRecordedBytesPerKey = try ConfigurationMembers.integer(members, "maxRecordedBytesPerKey", 0...terabyte) ?? maxRecordedBytesPerKey
        maxShadowChannels = try ConfigurationMembers.integer(members, "maxShadowChannels", 0...1_000_000) ?? maxShadowChannels
        maxShadowChannelsPerKey = try ConfigurationMembers.integer(members, "maxShadowChannelsPerKey", 0...1_000_000) ?? maxShadowChannelsPerKey
    }
}
