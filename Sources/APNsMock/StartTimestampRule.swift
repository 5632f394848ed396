import TouchlineCore

/// How old (or how far ahead) a push-to-start's `aps.timestamp` may be when it arrives.
///
/// APNs itself does not read `timestamp`: the device does, to keep the newest content of an
/// activity. A start stamped long before it is sent (a start stored ahead and sent with the time
/// it was stored) opens an activity whose content claims to be that old, older than what its
/// channel publishes; Apple leaves the exact rule unpublished. So this check is the mock's own,
/// like its refusal of unknown `aps` keys, and off unless asked for
/// (``MockAPNsConfiguration/startTimestampTolerance``): a client that stamps starts when it
/// sends them passes it, one that does not fails it with `400 BadRequestPayload`.
struct StartTimestampRule: Sendable {
    let tolerance: Duration
    let clock: any WallClock

    /// Refuses `timestamp` (Unix seconds, nil when not an integer) unless it is within the
    /// tolerance of the mock's clock now, in whole seconds.
    func check(_ timestamp: Int64?) throws(MockAPNsRejection) {
        let now = clock.now().seconds
        let allowed = tolerance.inNanoseconds / 1_000_000_000
        guard let timestamp else {
            throw MockAPNsRejection(.badRequestPayload, "aps.timestamp of a start must be whole Unix seconds")
        }
        guard timestamp >= now - allowed else {
            throw MockAPNsRejection(.badRequestPayload, "aps.timestamp \(timestamp) of a start is \(now - timestamp) s before it arrived "
                                    + "(at most \(allowed) s): a start must carry the time it is sent")
        }
        guard timestamp <= now + allowed else {
            throw MockAPNsRejection(.badRequestPayload, "aps.timestamp \(timestamp) of a start is \(timestamp - now) s after it arrived "
                                    + "(at most \(allowed) s): the sender's clock is ahead")
        }
    }
}
