import TouchlineConfiguration
import TouchlineCore
import TouchlineStore

/// Turns a fact into the webhook event that reports it: a fresh event id, the JSON document
/// sent (and signed) byte for byte, and the endpoints subscribed to its type.
///
/// A value (`Sendable`, no state of its own) shared by every loop that records facts; the
/// event goes into the caller's store operations, so it commits with the fact or not at all.
package struct WebhookOutbox: Sendable {
    let settings: WebhookSettings
    let clock: any WallClock

    /// The outbox write for a `type` event with `data`.
    package func record(_ type: WebhookEventType, _ data: [JSONValue.Member]) -> WebhookOperation {
        let id = Self.newEventID()
        let now = clock.now()
        let body = JSONValue.object([
            .init("id", .string(id)), .init("type", .string(type.rawValue)), .init("createdAt", .integer(now.seconds)),
            .init("data", .object(data)),
        ]).encoded
        return .record(WebhookOutboxEntry(eventID: id, type: type.rawValue, createdAt: now, body: body,
                                          endpoints: settings.subscribers(of: type)))
    }

    /// 128 random bits in lowercase hex: unique without coordination between the two outboxes.
    static func newEventID() -> String {
        var random = SystemRandomNumberGenerator()
        let words = [random.next() as UInt64, random.next() as UInt64]
        return WebhookSignature.hex(words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (56 - 8 * $0)) } })
    }
}

extension StoreOperation {
    /// True for the outbox's writes: those a failed save hands on to the next one.
    package var isWebhook: Bool { if case .webhook = self { true } else { false } }
}
