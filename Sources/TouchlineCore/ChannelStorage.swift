/// What APNs keeps of a broadcast channel's messages for devices that are offline; fixed when
/// the channel is created. One type for the provider API, the engine, the store and APNs.
public enum ChannelStorage: String, Sendable, Codable, CaseIterable {
    /// APNs keeps nothing; only `apns-expiration: 0` is accepted. Apple grants these channels a
    /// higher publishing budget and recommends them for live scores.
    case noStorage = "no-storage"
    /// APNs keeps the latest message for offline devices, for at most 8 hours.
    case mostRecent = "most-recent"

    /// APNs' `message-storage-policy` number: 0 = no message stored, 1 = most recent stored.
    public var messageStoragePolicy: Int {
        switch self {
        case .noStorage: 0
        case .mostRecent: 1
        }
    }

    /// The case for APNs' `message-storage-policy` number, nil for any other number.
    public init?(messageStoragePolicy: Int) {
        switch messageStoragePolicy {
        case 0: self = .noStorage
        case 1: self = .mostRecent
        default: return nil
        }
    }
}
