extension LiveActivityPayload {
    /// What every payload ``encoded()`` writes begins with, up to its timestamp's digits.
    private static let timestampPrefix = Array(#"{"aps":{"timestamp":"#.utf8)

    /// `payload`, as ``encoded()`` wrote it, stamped `timestamp` instead: a push stored ahead of
    /// its time (a scheduled kickoff) carries the time it is sent, as APNs and the device expect
    /// of `aps.timestamp`, while the rest stays byte for byte. Nil when `payload` does not begin
    /// the way ``encoded()`` writes.
    public static func restamped(_ payload: [UInt8], timestamp: UnixTime) -> [UInt8]? {
        guard payload.starts(with: timestampPrefix) else { return nil }
        var end = timestampPrefix.count
        if end < payload.count, payload[end] == UInt8(ascii: "-") { end += 1 }
        let digits = end
        while end < payload.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(payload[end]) { end += 1 }
        guard end > digits, end < payload.count, payload[end] == UInt8(ascii: ",") || payload[end] == UInt8(ascii: "}") else { return nil }
        return timestampPrefix + Array(String(timestamp.seconds).utf8) + payload[end...]
    }
}
