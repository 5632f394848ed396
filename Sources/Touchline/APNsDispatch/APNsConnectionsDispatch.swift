import APNs
import HTTP2
import TouchlineCore
import TouchlineRuntime

/// The APNs dispatch on real connections: an ``APNsConnections`` (its pools and client on one
/// loop). The gateway makes one for broadcasts and management, on the broadcast loop, and one for
/// device pushes, on the personal loop.
final class APNsConnectionsDispatch: BroadcastAPNsDispatch, PersonalAPNsDispatch {
    let connections: APNsConnections

    init(_ connections: APNsConnections) { self.connections = connections }

    var loop: EventLoop { connections.loop }

    func observeExchanges(_ observer: @escaping (APNsExchange) -> Void) { connections.client.exchangeObserver = observer }

    func poolStats(_ pool: APNsConnections.Pool) -> HTTP2ConnectionPool.Stats? { connections.stats(of: pool) }

    func credentialFigures() -> APNsCredentialFigures {
        let token = connections.client.providerToken
        return APNsCredentialFigures(issuedAt: token.issuedAt, statistics: token.statistics, renewalHold: token.renewalHold,
                                     heldRequests: connections.client.heldRequestCount)
    }

    func shutdown(gracePeriod: Duration?, isCutShort: @escaping @Sendable () -> Bool) async {
        await connections.shutdown(gracePeriod: gracePeriod, isCutShort: isCutShort)
    }

    func cutShutdownShort() { connections.cutShutdownShort() }

    func broadcast(_ broadcast: Broadcast, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        connections.client.broadcast(broadcast, completion: completion)
    }

    func createChannel(storage: ChannelStorage, completion: @escaping (Result<String, APNsError>) -> Void) {
        connections.client.createChannel(policy: storage, completion: completion)
    }

    func deleteChannel(_ apnsChannelID: String, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        connections.client.deleteChannel(apnsChannelID, completion: completion)
    }

    func listChannels(completion: @escaping (Result<[String], APNsError>) -> Void) {
        connections.client.listChannels(completion: completion)
    }

    func readChannel(_ apnsChannelID: String, completion: @escaping (Result<APNsChannelConfiguration, APNsError>) -> Void) {
        connections.client.readChannel(apnsChannelID, completion: completion)
    }

    func send(_ push: LiveActivityPush, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        connections.client.send(push, completion: completion)
    }
}
