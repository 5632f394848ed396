import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlineRuntime
import TouchlineStore
import TouchlineWebhooks

extension WebhookDelivery {
    /// Delivery for the gateway's two store files, on `loop`: outcomes go to the file the event
    /// came from (one small batch per loop turn and file), facts without a store change of their
    /// own to the personal file. Not yet polling: the gateway calls ``start()`` once its stores
    /// are open, before it restores its channels.
    static func forStores(loop: EventLoop, settings: WebhookSettings, stores: GatewayStores,
                        clock: any WallClock, log: GatewayLog) throws -> WebhookDelivery {
        let personalStore = stores.personal
        let channelsReader = try stores.channelOutboxReader()
        let personalReader: any WebhookOutboxReader
        do { personalReader = try stores.personalOutboxReader() } catch {
            channelsReader.close()
            throw error
        }
        let sources = [
            Source(name: "channels", reader: channelsReader, write: stores.channelOutboxWrite),
            Source(name: "personal", reader: personalReader) { operation, done in personalStore.submit([.webhook(operation)], completion: done) },
        ]
        do {
            return try WebhookDelivery(loop: loop, settings: settings, sources: sources, clock: clock, log: log)
        } catch {
            channelsReader.close()
            personalReader.close()
            throw error
        }
    }
}
