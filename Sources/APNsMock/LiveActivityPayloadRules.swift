/// The `aps` rules for Live Activity payloads (ActivityKit push notifications).
///
/// Stricter than APNs in one deliberate way: APNs passes unknown `aps` keys through, but the
/// device ignores them, so a misspelt key ("content_state", "staleDate") means an activity that
/// silently never updates. The mock refuses such payloads with `BadRequestPayload` so that the
/// bug surfaces in tests instead.
enum LiveActivityPayloadRules {
    /// Where the payload is going: broadcasts cannot start activities or carry start-only keys.
    enum Destination {
        case device
        case broadcast
    }

    /// What the rules found out, for the recording.
    struct Summary {
        var event: String
        var inputPushChannel: String?
        /// `aps.timestamp` when it is a whole number.
        var timestamp: Int64?
    }

    /// The `aps` keys of Live Activities, with the JSON type each must have.
    private enum Key: Int, CaseIterable {
        case timestamp, event, contentState, staleDate, dismissalDate, relevanceScore, alert
        case attributesType, attributes, inputPushChannel, inputPushToken

        var name: StaticString {
            switch self {
            case .timestamp: "timestamp"
            case .event: "event"
            case .contentState: "content-state"
            case .staleDate: "stale-date"
            case .dismissalDate: "dismissal-date"
            case .relevanceScore: "relevance-score"
            case .alert: "alert"
            case .attributesType: "attributes-type"
            case .attributes: "attributes"
            case .inputPushChannel: "input-push-channel"
            case .inputPushToken: "input-push-token"
            }
        }

        var kind: JSONDocument.Kind {
            switch self {
            case .timestamp, .staleDate, .dismissalDate, .relevanceScore, .inputPushToken: .number
            case .event, .attributesType, .inputPushChannel: .string
            case .contentState, .alert, .attributes: .object
            }
        }

        var isStartOnly: Bool { rawValue >= Key.attributesType.rawValue }

        /// `allCases` builds a new array on every access; this is built once.
        static let all = allCases

        /// The key a member names, trying only the keys of that length.
        static func of(_ member: JSONDocument.Member, in document: JSONDocument) -> Key? {
            let candidates: [Key] = switch member.keyRange.count - 2 {
            case 5: [.event, .alert]
            case 9: [.timestamp]
            case 10: [.staleDate, .attributes]
            case 13: [.contentState]
            case 14: [.dismissalDate]
            case 15: [.relevanceScore, .attributesType]
            case 16: [.inputPushToken]
            case 18: [.inputPushChannel]
            default: all // a key written with escapes has another raw length
            }
            return candidates.first { document.keyEquals(member, $0.name) }
        }
    }

    private static let alertTextKeys: [StaticString] = ["title", "subtitle", "body", "sound"]

    /// Checks `body` (already known to be non-empty and within the size limit).
    static func check(_ body: [UInt8], for destination: Destination, registry: MockAPNsRegistry) throws(MockAPNsRejection) -> Summary {
        let (document, aps) = try apsObject(body)
        var values = InlineArray<11, JSONDocument.Value?>(repeating: nil)
        for member in document.members(of: aps) {
            guard let key = Key.of(member, in: document) else {
                throw reject("aps.\(document.key(member)) is not a Live Activity key")
            }
            guard values[key.rawValue] == nil else { throw reject("aps.\(key.name) appears twice") }
            guard member.value.kind == key.kind else { throw reject("aps.\(key.name) must be a JSON \(key.kind)") }
            values[key.rawValue] = member.value
        }

        guard let eventValue = values[Key.event.rawValue] else { throw reject("aps.event is required") }
        let event: String
        if document.stringEquals(eventValue, "update") {
            event = "update"
        } else if document.stringEquals(eventValue, "end") {
            event = "end"
        } else if document.stringEquals(eventValue, "start") {
            guard destination == .device else { throw reject("a broadcast cannot start a Live Activity (aps.event start)") }
            event = "start"
        } else {
            throw reject("aps.event must be start, update or end, not \(document.string(eventValue))")
        }
        guard let timestamp = values[Key.timestamp.rawValue] else { throw reject("aps.timestamp is required") }
        guard values[Key.contentState.rawValue] != nil else { throw reject("aps.content-state is required") }
        if let alert = values[Key.alert.rawValue] { try checkAlert(document, alert) }

        guard event == "start" else {
            if let key = Key.all.first(where: { $0.isStartOnly && values[$0.rawValue] != nil }) {
                throw reject("aps.\(key.name) is only allowed with event start")
            }
            return Summary(event: event, timestamp: document.integer(timestamp))
        }
        guard let attributesType = values[Key.attributesType.rawValue] else { throw reject("a start needs aps.attributes-type") }
        guard attributesType.range.count > 2 else { throw reject("aps.attributes-type is empty") }
        guard values[Key.attributes.rawValue] != nil else { throw reject("a start needs aps.attributes") }
        guard values[Key.alert.rawValue] != nil else { throw reject("a start needs aps.alert") }
        if let token = values[Key.inputPushToken.rawValue], document.integer(token) != 1 {
            throw reject("aps.input-push-token must be the number 1")
        }
        var channel: String?
        if let channelValue = values[Key.inputPushChannel.rawValue] {
            let id = document.string(channelValue)
            guard registry.storagePolicy(of: id) != nil else {
                throw MockAPNsRejection(.channelNotRegistered, "aps.input-push-channel \(id) is not a live channel")
            }
            channel = id
        }
        return Summary(event: event, inputPushChannel: channel, timestamp: document.integer(timestamp))
    }

    /// For other push types: any JSON object with an `aps` object.
    static func checkGeneric(_ body: [UInt8]) throws(MockAPNsRejection) {
        _ = try apsObject(body)
    }

    private static func apsObject(_ body: [UInt8]) throws(MockAPNsRejection) -> (JSONDocument, JSONDocument.Value) {
        let document: JSONDocument
        do {
            document = try JSONDocument(body)
        } catch {
            throw reject("the payload is not JSON: \(error)")
        }
        guard document.root.kind == .object else { throw reject("the payload must be a JSON object") }
        var aps: JSONDocument.Value?
        for member in document.members(of: document.root) where document.keyEquals(member, "aps") {
            guard aps == nil else { throw reject("aps appears twice") }
            aps = member.value
        }
        guard let aps else { throw reject("the payload has no aps") }
        guard aps.kind == .object else { throw reject("aps must be an object") }
        return (document, aps)
    }

    /// `title`, `subtitle` and `body` are strings or localisation objects; `sound` a name or a dictionary.
    private static func checkAlert(_ document: JSONDocument, _ alert: JSONDocument.Value) throws(MockAPNsRejection) {
        // Plain strings, the common case, cost one kind test each.
        for member in document.members(of: alert) where member.value.kind != .string {
            for name in alertTextKeys where document.keyEquals(member, name) {
                guard member.value.kind == .object else { throw reject("aps.alert.\(name) must be a string or an object") }
                if name.description != "sound" { try checkLocalizedText(document, member.value, at: "aps.alert.\(name)") }
            }
        }
    }

    /// A Live Activity alert text in its localized form, as ActivityKit reads it:
    /// `{"loc-key": "non-empty key", "loc-args": ["strings"...]}`, nothing else. The phone
    /// formats `loc-args` into the key's string, so each must be a string.
    private static func checkLocalizedText(_ document: JSONDocument, _ text: JSONDocument.Value, at path: String) throws(MockAPNsRejection) {
        var key: JSONDocument.Value?
        for member in document.members(of: text) {
            if document.keyEquals(member, "loc-key") {
                guard member.value.kind == .string, member.value.range.count > 2 else { throw reject("\(path).loc-key must be a non-empty string") }
                key = member.value
            } else if document.keyEquals(member, "loc-args") {
                guard member.value.kind == .array, document.elementKinds(of: member.value).allSatisfy({ $0 == .string }) else {
                    throw reject("\(path).loc-args must be an array of strings")
                }
            } else {
                throw reject("\(path) may hold only loc-key and loc-args, not \(document.key(member))")
            }
        }
        guard key != nil else { throw reject("\(path) is an object without loc-key") }
    }

    private static func reject(_ detail: String) -> MockAPNsRejection {
        MockAPNsRejection(.badRequestPayload, detail)
    }
}
