/// How a provider ranks an event, as the gateway's `importance` member spells it.
public enum MatchdayImportance: String, Sendable, CaseIterable, Codable {
    case low, normal, critical
}

/// The lock-screen alert of a critical event.
public struct MatchdayAlert: Sendable, Equatable {
    public var title: String
    public var body: String

    public init(title: String, body: String) {
        (self.title, self.body) = (title, body)
    }
}

/// One event of a match day: when it is due, which match it belongs to, and the merge-patch
/// event (`POST /v1/channels/{id}/events`) it becomes.
///
/// The body is built at send time: the patch always carries `"sentAt"`, the sender's wall clock
/// in Unix nanoseconds, which the channel's content-state (and so every push) repeats, so the
/// receiving side can time ingest→APNs. `seq` is the sender's too: a channel's events are sent
/// in schedule order with `seq` 1, 2, 3...
public struct MatchdayEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable, Codable {
        /// Status live, period 1H, clock running from 0.
        case kickoff
        /// The clock reading, every second while it runs.
        case clock
        /// Possession and shots.
        case stats
        case goal
        case yellowCard
        case redCard
        case substitution
        /// Status break, period HT, clock stopped at 45:00.
        case halfTime
        /// Status live, period 2H, clock running from 45:00.
        case secondHalf
        /// Status finished, clock stopped at 90:00.
        case fullTime
    }

    /// Due time from the start of the run.
    public let offsetNanoseconds: Int64
    /// Index of the match in `MatchdaySchedule.matches`.
    public let match: Int
    public let kind: Kind
    public let importance: MatchdayImportance
    /// Only on critical events.
    public let alert: MatchdayAlert?
    /// The patch's members as JSON text without the braces and without `sentAt`.
    public let patchMembers: String

    public init(offsetNanoseconds: Int64, match: Int, kind: Kind, importance: MatchdayImportance, alert: MatchdayAlert?,
                patchMembers: String) {
        (self.offsetNanoseconds, self.match, self.kind) = (offsetNanoseconds, match, kind)
        (self.importance, self.alert, self.patchMembers) = (importance, alert, patchMembers)
    }

    /// The request body: `{"seq":…,"patch":{…,"sentAt":…},"importance":…[,"alert":{…}]}`.
    public func body(seq: Int, sentAt: Int64) -> [UInt8] {
        var text = #"{"seq":\#(seq),"patch":{\#(patchMembers),"sentAt":\#(sentAt)},"importance":"\#(importance.rawValue)""#
        if let alert {
            text += #","alert":{"title":\#(jsonString(alert.title)),"body":\#(jsonString(alert.body)),"sound":"default"}"#
        }
        text += "}"
        return Array(text.utf8)
    }
}

/// `text` as a JSON string literal.
func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case _ where scalar.value < 0x20: out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
            + String(scalar.value, radix: 16)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
