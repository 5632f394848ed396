import TouchlineConfiguration
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

/// The two stores, and how to open readers of what each commits (one per thread that reads).
package struct GatewayStores: Sendable {
    package var channels: any ChannelStoreWriter
    package var personal: any PersonalStoreWriter
    package var channelReader: @Sendable () throws -> any ChannelStoreReader
    package var personalReader: @Sendable () throws -> any PersonalStoreReader
    package var channelOutboxReader: @Sendable () throws -> any WebhookOutboxReader
    package var personalOutboxReader: @Sendable () throws -> any WebhookOutboxReader
    /// How the webhook delivery writes to the channel outbox (by default one batch on the
    /// channel store; a cluster splits outcomes by partition: ``clusterStores(_:_:)``).
    package var channelOutboxWrite: OutboxWrite

    /// How an outbox operation is written to its store, with the completion told the result.
    package typealias OutboxWrite = WebhookDelivery.OutboxWrite

    package init(channels: any ChannelStoreWriter, personal: any PersonalStoreWriter,
                 channelReader: @escaping @Sendable () throws -> any ChannelStoreReader,
                 personalReader: @escaping @Sendable () throws -> any PersonalStoreReader,
                 channelOutboxReader: @escaping @Sendable () throws -> any WebhookOutboxReader,
                 personalOutboxReader: @escaping @Sendable () throws -> any WebhookOutboxReader,
                 channelOutboxWrite: OutboxWrite? = nil) {
        self.channels = channels
        self.personal = personal
        self.channelReader = channelReader
        self.personalReader = personalReader
        self.channelOutboxReader = channelOutboxReader
        self.personalOutboxReader = personalOutboxReader
        self.channelOutboxWrite = channelOutboxWrite ?? { operation, done in channels.submit(WriteBatch([.webhook(operation)]), completion: done) }
    }

    /// Closes both writers (a start that failed).
    package func close() {
        channels.close()
        personal.close()
    }

    /// `touchline.sqlite` and `personal.sqlite` in the data directory, each with a writer
    /// thread of its own (the personal one at the personal queue's priority).
    package static func sqlite(_ configuration: GatewayConfiguration) throws -> GatewayStores {
        let channelsPath = configuration.dataDirectory + "/touchline.sqlite"
        let personalPath = configuration.dataDirectory + "/personal.sqlite"
        try PersonalStoreSplit.copyLegacyRows(from: channelsPath, to: personalPath)
        // Every 202 waits for this writer's commit: it preempts background work when it wakes.
        let faultFile = configuration.storeFaultFile
        let store = try StoreWriter(path: channelsPath, slice: GatewayLoops.broadcastPathSlice, faultFile: faultFile)
        let personalStore: StoreWriter
        do {
            // The personal queue's commits (saves, registrations) give way to the broadcast path's, like its loop.
            personalStore = try StoreWriter(path: personalPath, niceness: Int32(configuration.personalQueue.niceness), faultFile: faultFile)
        } catch {
            store.close()
            throw error
        }
        return GatewayStores(channels: store, personal: personalStore,
                      channelReader: { try SQLiteChannelReader(path: channelsPath) },
                      personalReader: { try SQLiteTokenReader(path: personalPath) },
                      channelOutboxReader: { try SQLiteWebhookReader(path: channelsPath) },
                      personalOutboxReader: { try SQLiteWebhookReader(path: personalPath) })
    }
}

/// The channel and personal stores: closed (committing what is queued) after everything that
/// writes to them has stopped.
extension GatewayStores: GatewayService {}
