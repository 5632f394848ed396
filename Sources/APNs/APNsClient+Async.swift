import TouchlineCore

/// Async forms of the client's calls for control paths (channel management at start-up, CLI,
/// tests): each hops onto the client's loop, starts the call there, and resumes when its
/// completion runs. Hot paths use the completion-handler forms on the loop itself, which cost
/// no thread hop.
extension APNsClient {
    public func send(_ push: LiveActivityPush) async throws(APNsError) -> APNsResponse {
        try await onLoop { client, done in client.send(push, completion: done) }
    }

    public func broadcast(_ broadcast: Broadcast) async throws(APNsError) -> APNsResponse {
        try await onLoop { client, done in client.broadcast(broadcast, completion: done) }
    }

    /// Creates a channel and returns its id.
    public func createChannel(policy: ChannelStorage, requestID: String? = nil) async throws(APNsError) -> String {
        try await onLoop { client, done in client.createChannel(policy: policy, requestID: requestID, completion: done) }
    }

    public func readChannel(_ channelID: String, requestID: String? = nil) async throws(APNsError) -> APNsChannelConfiguration {
        try await onLoop { client, done in client.readChannel(channelID, requestID: requestID, completion: done) }
    }

    public func deleteChannel(_ channelID: String, requestID: String? = nil) async throws(APNsError) -> APNsResponse {
        try await onLoop { client, done in client.deleteChannel(channelID, requestID: requestID, completion: done) }
    }

    public func listChannels(requestID: String? = nil) async throws(APNsError) -> [String] {
        try await onLoop { client, done in client.listChannels(requestID: requestID, completion: done) }
    }

    /// Runs `start` on the loop and waits for the completion it is handed.
    private func onLoop<T: Sendable>(
        _ start: @escaping @Sendable (APNsClient, @escaping (Result<T, APNsError>) -> Void) -> Void
    ) async throws(APNsError) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, APNsError>, Never>) in
            loop.execute { [self] in start(self) { continuation.resume(returning: $0) } }
        }
        return try result.get()
    }
}
