import Foundation
import Synchronization
import TouchlineCore

/// The mock's shared world: broadcast channels and device tokens that have gone away.
/// Thread-safe; every loop reads it, the management endpoints and tests change it.
final class MockAPNsRegistry: Sendable {
    private struct State {
        var channels: [String: Int] = [:]
        var unregistered: [String: UnixTime] = [:]
        var foreign: Set<String> = []
        var random = SystemRandomNumberGenerator()
    }

    private let state: Mutex<State>
    private let channelLimit: Int
    private let channelsFile: String?

    /// - Parameter channelsFile: where channels persist across restarts (see
    ///   ``MockAPNsConfiguration/channelsFile``); a missing file means no channels yet.
    init(channelLimit: Int, unregisteredTokens: Set<String>, since: UnixTime, channelsFile: String? = nil) throws(MockAPNsSetupError) {
        self.channelLimit = channelLimit
        self.channelsFile = channelsFile
        var initial = State()
        for token in unregisteredTokens { initial.unregistered[token.lowercased()] = since }
        if let channelsFile, FileManager.default.fileExists(atPath: channelsFile) {
            initial.channels = try Self.loadChannels(channelsFile)
        }
        state = Mutex(initial)
    }

    private static func loadChannels(_ path: String) throws(MockAPNsSetupError) -> [String: Int] {
        guard let data = FileManager.default.contents(atPath: path) else { throw MockAPNsSetupError("cannot read channels file \(path)") }
        guard case .object(let members)? = try? JSONParser.parse(Array(data)) else {
            throw MockAPNsSetupError("channels file \(path) is not a JSON object of channel id to storage policy")
        }
        var channels: [String: Int] = [:]
        for member in members {
            guard case .integer(let policy) = member.value, policy == 0 || policy == 1 else {
                throw MockAPNsSetupError("channels file \(path): channel \(member.name) has no storage policy 0 or 1")
            }
            channels[member.name] = Int(policy)
        }
        return channels
    }

    /// Rewrites the channels file (atomically) under the registry's lock, so writes never interleave.
    private func save(_ channels: [String: Int]) {
        guard let channelsFile else { return }
        let json = JSONValue.object(channels.sorted { $0.key < $1.key }.map { .init($0.key, .integer(Int64($0.value))) })
        try? Data(json.encoded).write(to: URL(fileURLWithPath: channelsFile), options: .atomic)
    }

    /// True for a token marked as another environment's (``MockAPNsServer/disown(token:)``).
    func isForeign(_ token: String) -> Bool {
        state.withLock { $0.foreign.isEmpty ? false : $0.foreign.contains(token.lowercased()) }
    }

    func disown(_ token: String) {
        _ = state.withLock { $0.foreign.insert(token.lowercased()) }
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
                    save(s.channels)
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
        state.withLock { s in
            guard s.channels.removeValue(forKey: channelID) != nil else { return false }
            save(s.channels)
            return true
        }
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
