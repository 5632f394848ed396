import Synchronization
import TouchlineCore

/// The mock's shared world: broadcast channels and device tokens that have gone away.
/// Thread-safe; every loop reads it, the management endpoints and tests change it.
final class MockAPNsRegistry: Sendable {
    private struct State {
        var channels: [String: Int] = [:]
        var unregistered: [String: UnixTime] = [:]
        var random = SystemRandomNumberGenerator()
    }

    private let state: Mutex<State>
    private let channelLimit: Int

    init(channelLimit: Int, unregisteredTokens: Set<String>, since: UnixTime) {
        self.channelLimit = channelLimit
        var initial = State()
        for token in unregisteredTokens { initial.unregistered[token.lowercased()] = since }
        state = Mutex(initial)
    }

    /// Creates a channel with a fresh random id (16 random bytes, base64), or nil at the limit.
    func createChannel(storagePolicy: Int) -> String? {
        state.withLock { s -> String? in
            guard s.channels.count < channelLimit else { return nil }
            while true {
                let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &s.random) }
                let id = MockAPNsText.base64(bytes)
                if s.channels[id] == nil {
                    s.channels[id] = storagePolicy
                    return id
                }
            }
        }
    }

    /// The storage policy of a live channel.
    func storagePolicy(of channelID: String) -> Int? {
        state.withLock { $0.channels[channelID] }
    }

    /// Deletes a channel; false when it did not exist.
    func deleteChannel(_ channelID: String) -> Bool {
        state.withLock { $0.channels.removeValue(forKey: channelID) != nil }
    }

    /// Every live channel: id -> storage policy.
    var channels: [String: Int] { state.withLock { $0.channels } }

    /// When the token stopped being valid, if it did (tokens compare case-insensitively).
    func unregisteredSince(_ token: String) -> UnixTime? {
        state.withLock { $0.unregistered.isEmpty ? nil : $0.unregistered[token.lowercased()] }
    }

    func unregister(_ token: String, at time: UnixTime) {
        state.withLock { $0.unregistered[token.lowercased()] = time }
    }
}
