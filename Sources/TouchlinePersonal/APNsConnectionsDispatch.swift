import APNs
import HTTP2
import TouchlineCore
import TouchlineRuntime

/// The APNs dispatch on real connections: an ``APNsConnections`` (its pools and client on one
/// loop). The gateway makes one for broadcasts and management, on the broadcast loop, and one for
/// device pushes, on the personal loop.
package final class APNsConnectionsDispatch: BroadcastAPNsDispatch, PersonalAPNsDispatch {
    let connections: APNsConnections

    package init(_ connections: APNsConnections) { self.connections = connections }

    package var loop: EventLoop { connections.loop }

    package func observeExchanges(_ observer: @escaping (APNsExchange) -> Void) { connections.client.exchangeObserver = observer }

    package func poolStats(_ pool: APNsConnections.Pool) -> HTTP2ConnectionPool.Stats? { connections.stats(of: pool) }

    package func credentialFigures() -> APNsCredentialFigures {
        let token = connections.client.providerToken
        return APNsCredentialFigures(issuedAt: token.issuedAt, statistics: token.statistics, renewalHold: token.renewalHold,
                                     heldRequests: connections.client.heldRequestCount)
    }

    package func shutdown(gracePeriod: Duration?, isCutShort: @escaping @Sendable () -> Bool) async {
        await connections.shutdown(gracePeriod: gracePeriod, isCutShort: isCutShort)
    }

    package func cutShutdownShort() { connections.cutShutdownShort() }

    package func broadcast(_ broadcast: Broadcast, fence: (any SideEffectFence)?, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        connections.client.broadcast(broadcast, fence: fence, completion: completion)
    }

    package func createChannel(storage: ChannelStorage, fence: (any SideEffectFence)?, completion: @escaping (Result<String, APNsError>) -> Void) {
        connections.client.createChannel(policy: storage, fence: fence, completion: completion)
    }

    package func deleteChannel(_ apnsChannelID: String, fence: (any SideEffectFence)?, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        connections.client.deleteChannel(apnsChannelID, fence: fence, completion: completion)
    }

    package func listChannels(completion: @escaping (Result<[String], APNsError>) -> Void) {
        connections.client.listChannels(completion: completion)
    }

    package func readChannel(_ apnsChannelID: String, completion: @escaping (Result<APNsChannelConfiguration, APNsError>) -> Void) {
        connections.client.readChannel(apnsChannelID, completion: completion)
    }

    package func send(_ push: LiveActivityPush, fence: (any SideEffectFence)?, completion: @escaping (Result<APNsResponse, APNsError>) -> Void) {
        connections.client.send(push, fence: fence, completion: completion)
    }
}
