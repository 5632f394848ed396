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
    }

    private static let startOnlyKeys: Set<String> = ["attributes-type", "attributes", "input-push-channel", "input-push-token"]
    private static let knownKeys = Set([
        "timestamp", "event", "content-state", "stale-date", "dismissal-date", "relevance-score", "alert",
    ]).union(startOnlyKeys)

    /// Checks `body` (already known to be non-empty and within the size limit).
    static func check(_ body: [UInt8], for destination: Destination, registry: MockAPNsRegistry) throws(MockAPNsRejection) -> Summary {
        let (document, aps) = try apsObject(body)
        var values: [String: JSONDocument.Value] = [:]
        for member in document.members(of: aps) {
            guard values.updateValue(member.value, forKey: member.key) == nil else {
                throw reject("aps.\(member.key) appears twice")
            }
            guard knownKeys.contains(member.key) else {
                throw reject("aps.\(member.key) is not a Live Activity key")
            }
        }

        guard let eventValue = values["event"] else { throw reject("aps.event is required") }
        guard eventValue.kind == .string else { throw reject("aps.event must be a string") }
        let event = document.string(eventValue)
        let isStart = event == "start"
        switch (event, destination) {
        case ("update", _), ("end", _), ("start", .device): break
        case ("start", .broadcast): throw reject("a broadcast cannot start a Live Activity (aps.event start)")
        default: throw reject("aps.event must be start, update or end, not \(event)")
        }

        try require(values, "timestamp", .number)
        try require(values, "content-state", .object)
        try optional(values, "stale-date", .number)
        try optional(values, "dismissal-date", .number)
        try optional(values, "relevance-score", .number)
        try optional(values, "alert", .object)
        if let alert = values["alert"] { try checkAlert(document, alert) }

        if !isStart {
            if let key = startOnlyKeys.sorted().first(where: { values[$0] != nil }) {
                throw reject("aps.\(key) is only allowed with event start")
            }
            return Summary(event: event)
        }
        try require(values, "attributes-type", .string)
        guard !document.string(values["attributes-type"]!).isEmpty else { throw reject("aps.attributes-type is empty") }
        try require(values, "attributes", .object)
        guard values["alert"] != nil else { throw reject("a start needs aps.alert") }
        if let token = values["input-push-token"], document.integer(token) != 1 {
            throw reject("aps.input-push-token must be the number 1")
        }
        var channel: String?
        if let channelValue = values["input-push-channel"] {
            guard channelValue.kind == .string else { throw reject("aps.input-push-channel must be a string") }
            let id = document.string(channelValue)
            guard registry.storagePolicy(of: id) != nil else {
                throw MockAPNsRejection(.channelNotRegistered, "aps.input-push-channel \(id) is not a live channel")
            }
            channel = id
        }
        return Summary(event: event, inputPushChannel: channel)
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
        let aps = document.members(of: document.root).filter { $0.key == "aps" }
        guard aps.count == 1 else { throw reject(aps.isEmpty ? "the payload has no aps" : "aps appears twice") }
        guard aps[0].value.kind == .object else { throw reject("aps must be an object") }
        return (document, aps[0].value)
    }

    /// `title`, `subtitle` and `body` are strings or localisation objects; `sound` a name or a dictionary.
    private static func checkAlert(_ document: JSONDocument, _ alert: JSONDocument.Value) throws(MockAPNsRejection) {
        for member in document.members(of: alert) {
            switch member.key {
            case "title", "subtitle", "body", "sound":
                guard member.value.kind == .string || member.value.kind == .object else {
                    throw reject("aps.alert.\(member.key) must be a string or an object")
                }
            default:
                break
            }
        }
    }

    private static func require(_ values: [String: JSONDocument.Value], _ key: String, _ kind: JSONDocument.Kind) throws(MockAPNsRejection) {
        guard values[key] != nil else { throw reject("aps.\(key) is required") }
        try optional(values, key, kind)
    }

    private static func optional(_ values: [String: JSONDocument.Value], _ key: String, _ kind: JSONDocument.Kind) throws(MockAPNsRejection) {
        if let value = values[key], value.kind != kind {
            throw reject("aps.\(key) must be a JSON \(kind)")
        }
    }

    private static func reject(_ detail: String) -> MockAPNsRejection {
        MockAPNsRejection(.badRequestPayload, detail)
    }
}
