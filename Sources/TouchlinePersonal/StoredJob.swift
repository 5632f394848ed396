import APNs
import TouchlineCore
import TouchlineStore

/// A personal job read back from the store, checked before it may resume: a record that fails
/// here is reported broken with the reason (and never sent), so one bad row cannot stop the
/// queue or send a push APNs would refuse.
package struct StoredJob {
    let audience: PersonalAudience
    /// `aps.event` of the payload.
    let event: String
    /// `aps.input-push-channel`: the APNs channel a kickoff's activities subscribe to.
    package let inputPushChannel: String?

    /// Why a job cannot run, naming the part.
    package struct Broken: Error, CustomStringConvertible {
        package var description: String
    }

    package init(_ record: PersonalJobRecord) throws(Broken) {
        if let unreadable = record.unreadable { throw Broken(description: unreadable) }
        guard let audience = PersonalAudience(storedText: record.audience) else {
            throw Broken(description: "its audience \(record.audience.prefix(80)) cannot be read")
        }
        guard record.priority == 5 || record.priority == 10 else { throw Broken(description: "its priority \(record.priority) is not 5 or 10") }
        guard record.payload.count <= LiveActivityPush.maximumPayloadSize else {
            throw Broken(description: "its payload is \(record.payload.count) bytes, over APNs' \(LiveActivityPush.maximumPayloadSize)")
        }
        guard case .object(let aps)? = (try? JSONParser.parse(record.payload))?[member: "aps"],
              case .string(let event)? = JSONValue.object(aps)[member: "event"] else {
            throw Broken(description: "its payload is not a Live Activity push ({\"aps\": {\"event\": ...}})")
        }
        self.audience = audience
        self.event = event
        if case .string(let channel)? = JSONValue.object(aps)[member: "input-push-channel"] { inputPushChannel = channel } else { inputPushChannel = nil }
    }
}
