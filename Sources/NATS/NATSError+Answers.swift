import CNATS

/// The failures a JetStream cluster answers with, made outside the C client: an implementation
/// of ``JetStreamClient`` that is not the client (the in-memory cluster the tests run gateways
/// on) reports them with the same statuses and codes, so that ``NATSError/isWrongLastSequence``,
/// ``NATSError/isTimeout`` and the callers' checks of ``NATSError/jetStreamCode`` read them as
/// they read the servers'.
extension NATSError {
    /// A publish whose expected last sequence of the stream was not the last one.
    public static func wrongLastSequence(_ last: UInt64, operation: String) -> NATSError {
        NATSError(status: NATS_ERR.rawValue, jetStreamCode: Int(JSStreamWrongLastSequenceErr.rawValue), operation: operation,
                  detail: "wrong last sequence: \(last)")
    }

    /// A call naming a stream that does not exist.
    public static func streamNotFound(operation: String) -> NATSError {
        NATSError(status: NATS_ERR.rawValue, jetStreamCode: Int(JSStreamNotFoundErr.rawValue), operation: operation,
                  detail: "stream not found")
    }

    /// A publish to a subject no stream stores: nobody answers it.
    public static func noResponders(operation: String) -> NATSError {
        clientStatus(NATS_NO_RESPONDERS, operation: operation)
    }

    /// A call the cluster did not answer in time (no quorum, a lost server): the outcome is unknown.
    public static func timeout(operation: String) -> NATSError {
        clientStatus(NATS_TIMEOUT, operation: operation)
    }

    /// A publish the stream refuses for its size limits (`maximumBytes`, `maximumMessageSize`).
    public static func storeRefused(_ reason: String, operation: String) -> NATSError {
        NATSError(status: NATS_ERR.rawValue, jetStreamCode: Int(JSStreamStoreFailedErr.rawValue), operation: operation, detail: reason)
    }

    /// A publish larger than the stream's `maximumMessageSize`.
    public static func messageTooLarge(operation: String) -> NATSError {
        NATSError(status: NATS_ERR.rawValue, jetStreamCode: Int(JSStreamMessageExceedsMaximumErr.rawValue), operation: operation,
                  detail: "message size exceeds maximum allowed")
    }

    /// A message larger than the servers' `max_payload`: the client refuses to send it.
    public static func payloadTooLarge(operation: String) -> NATSError {
        clientStatus(NATS_MAX_PAYLOAD, operation: operation)
    }

    /// A call on a closed connection.
    public static func connectionClosed(operation: String) -> NATSError {
        clientStatus(NATS_CONNECTION_CLOSED, operation: operation)
    }

    /// A failure the C client reports by its status alone, described by the client's own text.
    private static func clientStatus(_ status: natsStatus, operation: String) -> NATSError {
        NATSError(status: status.rawValue, operation: operation, detail: String(cString: natsStatus_GetText(status)))
    }
}
