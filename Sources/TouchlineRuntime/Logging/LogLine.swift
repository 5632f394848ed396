#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The optional context of a log line. Each set member becomes a JSON member of that name.
public struct LogFields: Sendable {
    /// The channel id (provider API), `channel`.
    public var channel: String?
    /// The personal job id, `job`.
    public var job: String?
    /// The APNs request id (`apns-id` or `apns-request-id`) to quote to Apple, `apnsId`.
    public var apnsID: String?
    /// A device token, redacted by its type, `token`.
    public var token: RedactedToken?
    /// What went wrong, in the error's own words, `error`.
    public var error: String?

    public init(channel: String? = nil, job: String? = nil, apnsID: String? = nil, token: RedactedToken? = nil, error: String? = nil) {
        self.channel = channel
        self.job = job
        self.apnsID = apnsID
        self.token = token
        self.error = error
    }
}

/// Formats one log line: a JSON object on one line, members in a fixed order
/// (`time`, `level`, `component`, `message`, then the fields that are set), ending in `\n`.
enum LogLine {
    static func format(time: LogTimestamp, level: LogLevel, component: String, message: String, fields: LogFields) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(160 + message.utf8.count)
        line.append(contentsOf: #"{"time":""#.utf8)
        time.appendRFC3339(to: &line)
        line.append(contentsOf: #"","level":""#.utf8)
        line.append(contentsOf: level.name.utf8)
        line.append(UInt8(ascii: "\""))
        appendMember("component", component, to: &line)
        appendMember("message", message, to: &line)
        if let channel = fields.channel { appendMember("channel", channel, to: &line) }
        if let job = fields.job { appendMember("job", job, to: &line) }
        if let apnsID = fields.apnsID { appendMember("apnsId", apnsID, to: &line) }
        if let token = fields.token { appendMember("token", token.description, to: &line) }
        if let error = fields.error { appendMember("error", error, to: &line) }
        line.append(contentsOf: "}\n".utf8)
        return line
    }

    private static func appendMember(_ name: StaticString, _ value: String, to line: inout [UInt8]) {
        line.append(contentsOf: #",""#.utf8)
        line.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        line.append(contentsOf: #"":""#.utf8)
        appendEscaped(value, to: &line)
        line.append(UInt8(ascii: "\""))
    }

    /// JSON string contents: quote, backslash and control characters escaped, the rest as UTF-8.
    private static func appendEscaped(_ text: String, to line: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): line.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): line.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\n"): line.append(contentsOf: #"\n"#.utf8)
            case UInt8(ascii: "\r"): line.append(contentsOf: #"\r"#.utf8)
            case UInt8(ascii: "\t"): line.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20, 0x7f:
                line.append(contentsOf: #"\u00"#.utf8)
                line.append(hex[Int(byte >> 4)])
                line.append(hex[Int(byte & 0xf)])
            default: line.append(byte)
            }
        }
    }
}

/// A wall-clock instant in milliseconds since the Unix epoch (not before it), written as RFC 3339 in UTC
/// (`2026-06-14T19:02:03.456Z`).
struct LogTimestamp: Equatable {
    var milliseconds: Int64

    /// The system's real-time clock now.
    static func now() -> LogTimestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return LogTimestamp(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }

    func appendRFC3339(to line: inout [UInt8]) {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        appendDigits(Int(parts.tm_year) + 1900, 4, &line)
        line.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mon) + 1, 2, &line)
        line.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mday), 2, &line)
        line.append(UInt8(ascii: "T"))
        appendDigits(Int(parts.tm_hour), 2, &line)
        line.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_min), 2, &line)
        line.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_sec), 2, &line)
        line.append(UInt8(ascii: "."))
        appendDigits(Int(milliseconds % 1000), 3, &line)
        line.append(UInt8(ascii: "Z"))
    }

    private func appendDigits(_ value: Int, _ width: Int, _ line: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            line.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
            rest %= divisor
            divisor /= 10
        }
    }
}
