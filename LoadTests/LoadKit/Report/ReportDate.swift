import Foundation

/// The three ways a report writes its start time, all in UTC so that results from machines in
/// different time zones sort and compare.
enum ReportDate {
    /// `2026-11-30T15:04:05Z`, for JSON.
    static func iso8601(_ date: Date) -> String {
        let c = utcComponents(date)
        return String(format: "%04ld-%02ld-%02ldT%02ld:%02ld:%02ldZ", c.year, c.month, c.day, c.hour, c.minute, c.second)
    }

    /// `2026-11-30T15-04-05Z`: the ISO form without colons, which some file systems refuse.
    static func folderName(_ date: Date) -> String {
        let c = utcComponents(date)
        return String(format: "%04ld-%02ld-%02ldT%02ld-%02ld-%02ldZ", c.year, c.month, c.day, c.hour, c.minute, c.second)
    }

    /// `2026-11-30 15:04 UTC`, for people.
    static func readable(_ date: Date) -> String {
        let c = utcComponents(date)
        return String(format: "%04ld-%02ld-%02ld %02ld:%02ld UTC", c.year, c.month, c.day, c.hour, c.minute)
    }

    static func parseISO8601(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
        return try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
    }

    private static func utcComponents(_ date: Date) -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return (c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }
}
