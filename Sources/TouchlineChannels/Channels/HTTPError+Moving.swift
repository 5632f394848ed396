import TouchlineRuntime

/// The two answers of a cluster gateway for a channel whose partition changes owner, kept apart
/// because a provider acts on them differently: after `channel_moving` nothing was done, after
/// `channel_moved` the request may have been acted on (its retry finds the effect: events are
/// idempotent by `seq`, creates by `id`). Both are 503 with `Retry-After: 1`.
extension HTTPError {
    /// Nothing was done: no gateway serves the channel's partition at this instant.
    package static func channelMoving(_ message: String) -> HTTPError {
        HTTPError(status: 503, code: "channel_moving", message: message, headers: [("Retry-After", "1")])
    }

    /// The partition moved while the request was under way at its owner: it may have been acted on.
    package static func channelMoved(_ message: String) -> HTTPError {
        HTTPError(status: 503, code: "channel_moved", message: message, headers: [("Retry-After", "1")])
    }
}
