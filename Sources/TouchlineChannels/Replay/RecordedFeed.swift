import Foundation
import TouchlineAccess
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// A channel's provider feed as it was received: what `GET /v1/channels/{id}/events/export`
/// writes from a recording channel and `touchline replay` reads (docs/replay.md).
///
/// JSON Lines: a header first, naming the channel as it was created (storage, policy, alert
/// mode, match attributes, the state before the first event, the creation time), then one line
/// per input in the order the channel took them: `{"receivedAt": ..., "event": {...}}` for an
/// event exactly as the provider posted it, `{"receivedAt": ..., "end": {...}}` for the end.
/// Times are RFC 3339 in UTC with milliseconds.
struct RecordedFeed: Sendable, Equatable {
    /// The header's `touchlineFeed`: the format's version.
    static let formatVersion: Int64 = 1
    /// A line longer than this is refused (an event body is at most a few kilobytes).
    static let maximumLineBytes = 256 * 1024
    /// Inputs per feed at most: a day of events at ten a second.
    static let maximumEntries = 1_000_000

    struct Header: Sendable, Equatable {
        var channelID: String
        /// The channel as it was created: storage, policy, alert mode, attributes, initial state.
        var channel: ChannelDefinition
        var createdAt: UnixTime
    }

    enum Input: Sendable, Equatable {
        /// An event as posted (one object with its `seq`).
        case event(JSONValue)
        /// The channel's end, with the final state it pushed.
        case end(finalState: JSONValue?, dismissAt: UnixTime?)
    }

    struct Entry: Sendable, Equatable {
        var receivedAt: UnixTime
        var input: Input
        /// The line it was read from, for messages (nil for an entry made from the store).
        var line: Int?

        /// The same input at the same time, wherever it was read from.
        static func == (a: Entry, b: Entry) -> Bool { a.receivedAt == b.receivedAt && a.input == b.input }
    }

    var header: Header
    var entries: [Entry]

    /// A line that cannot be read: its number (1 for the header) and what is wrong.
    struct LineError: Error, Equatable, CustomStringConvertible {
        var line: Int
        var message: String
        var description: String { "line \(line): \(message)" }
    }

    init(header: Header, entries: [Entry]) {
        self.header = header
        self.entries = entries
    }

    // MARK: Reading

    /// Reads a feed; the first problem throws, naming its line. Blank lines are skipped.
    init(jsonLines bytes: [UInt8]) throws(LineError) {
        var header: Header?
        var entries: [Entry] = []
        var lineNumber = 0
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            let trimmed = line.last == UInt8(ascii: "\r") ? line.dropLast() : line[...]
            if trimmed.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
            guard trimmed.count <= Self.maximumLineBytes else {
                throw LineError(line: lineNumber, message: "the line is \(trimmed.count) bytes, over the limit of \(Self.maximumLineBytes)")
            }
            do throws(HTTPError) {
                guard let read = header else {
                    header = try Self.header(Array(trimmed))
                    continue
                }
                guard entries.count < Self.maximumEntries else {
                    throw HTTPError(status: 400, code: "invalid_field", message: "a feed holds at most \(Self.maximumEntries) inputs")
                }
                var entry = try Self.entry(Array(trimmed), header: read)
                entry.line = lineNumber
                let previous = entries.last?.receivedAt ?? read.createdAt
                if entry.receivedAt < previous {
                    throw HTTPError(status: 400, code: "invalid_field",
                                    message: "receivedAt \(Self.timestamp(entry.receivedAt)) is before the previous line's (\(Self.timestamp(previous)))"
                                        + (entries.isEmpty ? ", the channel's creation" : ""))
                }
                if case .end = entries.last?.input {
                    throw HTTPError(status: 400, code: "invalid_field", message: "nothing may follow the channel's end")
                }
                entries.append(entry)
            } catch {
                throw LineError(line: lineNumber, message: error.message)
            }
        }
        guard let header else { throw LineError(line: max(1, lineNumber), message: "the feed is empty: its first line must be the header") }
        self.header = header
        self.entries = entries
    }

    private static func header(_ line: [UInt8]) throws(HTTPError) -> Header {
        let body = try RequestBody(parsing: line, allowed: ["touchlineFeed", "channel", "storagePolicy", "policy", "alerts", "attributes",
                                                            "initialState", "createdAt"])
        guard try body.integer("touchlineFeed") == formatVersion else {
            throw body.invalid("touchlineFeed", "must be \(formatVersion): the first line is the feed's header (docs/replay.md)")
        }
        let channelID = try body.required(body.string("channel"), "channel")
        let definition = try ChannelDefinition(body, defaultPolicy: .default, defaultAlertMode: .text)
        return Header(channelID: channelID, channel: definition, createdAt: try time(body, "createdAt"))
    }

    private static func entry(_ line: [UInt8], header: Header) throws(HTTPError) -> Entry {
        let body = try RequestBody(parsing: line, allowed: ["receivedAt", "event", "end"])
        let receivedAt = try time(body, "receivedAt")
        switch (try body.object("event"), try body.object("end")) {
        case (let event?, nil):
            return Entry(receivedAt: receivedAt, input: .event(event))
        case (nil, let end?):
            let fields = try RequestBody(end, allowed: ["finalState", "dismissAt"], prefix: "end.")
            let finalState = try fields.object("finalState")
            if let finalState {
                try ContentStateLimits.require(finalState, "end.finalState")
                try EventBatch.requireMatchState(finalState, on: header.channel.sports, name: "end.finalState")
            }
            let dismissAt = try fields.string("dismissAt").map { (text) throws(HTTPError) in
                guard let at = parseTimestamp(text) else { throw fields.invalid("dismissAt", "must be an RFC 3339 time, got \"\(text)\"") }
                return at
            }
            return Entry(receivedAt: receivedAt, input: .end(finalState: finalState, dismissAt: dismissAt))
        default:
            throw HTTPError(status: 400, code: "invalid_field", message: "a line after the header holds exactly one of 'event' and 'end'")
        }
    }

    private static func time(_ body: RequestBody, _ name: String) throws(HTTPError) -> UnixTime {
        let text = try body.required(body.string(name), name)
        guard let time = parseTimestamp(text) else {
            throw body.invalid(name, "must be an RFC 3339 time in UTC such as \"2026-06-14T19:02:03.456Z\", got \"\(text)\"")
        }
        return time
    }

    // MARK: Writing

    /// The feed as JSON Lines, each line ending with a newline.
    var jsonLines: [UInt8] {
        var bytes = Self.line(Self.headerJSON(header))
        for entry in entries { bytes += Self.line(Self.json(entry)) }
        return bytes
    }

    /// One line of a feed: `value` and a newline.
    static func line(_ value: JSONValue) -> [UInt8] {
        value.encoded + [UInt8(ascii: "\n")]
    }

    static func headerJSON(_ header: Header) -> JSONValue {
        var members: [JSONValue.Member] = [
            .init("touchlineFeed", .integer(formatVersion)), .init("channel", .string(header.channelID)),
            .init("storagePolicy", .string(header.channel.storage.rawValue)), .init("policy", header.channel.policy.json),
            .init("alerts", ["mode": .string(header.channel.alertMode.rawValue)]),
        ]
        if let attributes = header.channel.attributes { members.append(.init("attributes", attributes.json)) }
        members += [.init("initialState", header.channel.initialState), .init("createdAt", .string(timestamp(header.createdAt)))]
        return .object(members)
    }

    static func json(_ entry: Entry) -> JSONValue {
        let received = JSONValue.Member("receivedAt", .string(timestamp(entry.receivedAt)))
        switch entry.input {
        case .event(let event):
            return .object([received, .init("event", event)])
        case .end(let finalState, let dismissAt):
            var end: [JSONValue.Member] = []
            if let finalState { end.append(.init("finalState", finalState)) }
            if let dismissAt { end.append(.init("dismissAt", .string(timestamp(dismissAt)))) }
            return .object([received, .init("end", .object(end))])
        }
    }

    // MARK: Times

    /// `2026-06-14T19:02:03.456Z`: milliseconds (rounded down), UTC. Computed, not formatted
    /// with `ISO8601DateFormatter` (the same text, but a formatter costs about 80 µs to make,
    /// which was the whole time of an export: one per line).
    static func timestamp(_ time: UnixTime) -> String {
        let milliseconds = time.nanoseconds / 1_000_000 - (time.nanoseconds % 1_000_000 < 0 ? 1 : 0)
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds - 86_399_999) / 86_400_000
        let inDay = milliseconds - days * 86_400_000
        // The civil date of a day count from 1970-01-01 (proleptic Gregorian, eras of 400 years).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func digits(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(digits(year, 4))-\(digits(month, 2))-\(digits(day, 2))T\(digits(inDay / 3_600_000, 2)):\(digits(inDay / 60_000 % 60, 2))"
            + ":\(digits(inDay / 1_000 % 60, 2)).\(digits(inDay % 1_000, 3))Z"
    }

    /// An RFC 3339 time with or without fractional seconds, to the millisecond.
    static func parseTimestamp(_ text: String) -> UnixTime? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var date = formatter.date(from: text)
        if date == nil {
            formatter.formatOptions = [.withInternetDateTime]
            date = formatter.date(from: text)
        }
        guard let date, date.timeIntervalSince1970.isFinite, (0...4_102_444_800).contains(date.timeIntervalSince1970) else { return nil }
        return UnixTime(nanoseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()) * 1_000_000)
    }
}
