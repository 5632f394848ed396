/// Changes to a payload stored ahead of its time, made when it is sent: its timestamp, its channel.
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

    /// `payload`, as ``encoded()`` wrote it for a start into `previous`, subscribing its
    /// activity to `successor` instead (a scheduled kickoff moved to the channel that replaced
    /// its own), the rest byte for byte; nil when it is not a start into `previous`. The start's
    /// channel is the payload's last `"input-push-channel":` member: ``encoded()`` writes it
    /// after everything a provider gives.
    public static func retargeted(_ payload: [UInt8], from previous: String, to successor: String) -> [UInt8]? {
        let member = { (channel: String) -> [UInt8] in
            var writer = JSONWriter(capacity: channel.utf8.count + 24)
            writer.openObject()
            writer.key("input-push-channel"); writer.string(channel)
            return Array(writer.bytes.dropFirst())
        }
        let old = member(previous)
        guard let start = lastIndex(of: old, in: payload) else { return nil }
        return Array(payload[..<start]) + member(successor) + payload[(start + old.count)...]
    }

    private static func lastIndex(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return stride(from: bytes.count - needle.count, through: 0, by: -1).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
