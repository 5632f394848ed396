import NATS
import TouchlineCore

/// One JetStream stream held in memory: its messages in sequence order and the rules a server
/// applies when storing (the compare-and-set on the stream's last sequence, then deduplication by
/// message id, size limits, refusing or dropping the oldest when full, per-subject history,
/// age). A value with no I/O: the in-memory cluster owns one per stream and decides what to
/// deliver from what it returns.
package struct InMemoryStream: Sendable {
    package struct Message: Sendable {
        package var subject: String
        package var payload: [UInt8]
        package var headers: [String: String]
        package var sequence: UInt64
        package var storedAt: UnixTime

        var size: Int { subject.utf8.count + payload.count + headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } }
    }

    var settings: JetStream.StreamSettings
    private(set) var patterns: [SubjectPattern]
    package private(set) var messages: [Message] = []
    /// The last sequence ever given, kept when its message is removed (as a server keeps it).
    package private(set) var lastSequence: UInt64 = 0
    private var bytes = 0
    /// Message ids seen within the duplicate window, with the sequence they were stored at.
    private var recentIDs: [String: (sequence: UInt64, at: UnixTime)] = [:]

    package init(_ settings: JetStream.StreamSettings) {
        self.settings = settings
        patterns = settings.subjects.map(SubjectPattern.init)
    }

    mutating func update(_ settings: JetStream.StreamSettings) {
        self.settings = settings
        patterns = settings.subjects.map(SubjectPattern.init)
    }

    func stores(_ subject: String) -> Bool { patterns.contains { $0.matches(subject) } }

    /// Stores a publish, or says why not. As current servers do, the expected last sequence is
    /// checked first: a retry of a stored write that expects the sequence before it is refused,
    /// not answered as a duplicate. A known message id then answers the first one's sequence as
    /// a duplicate.
    package mutating func store(_ payload: [UInt8], subject: String, headers: [String: String], conditions: JetStream.PublishConditions,
                        now: UnixTime, operation: String) -> Result<JetStream.Acknowledgement, NATSError> {
        expire(now: now)
        if let expected = conditions.expectedLastSequence, expected != lastSequence {
            return .failure(.wrongLastSequence(lastSequence, operation: operation))
        }
        if let expected = conditions.expectedLastSubjectSequence {
            let last = messages.last { $0.subject == subject }?.sequence ?? 0
            if expected != last { return .failure(.wrongLastSequence(last, operation: operation)) }
        }
        if let id = conditions.messageID, let seen = recentIDs[id] {
            return .success(.init(stream: settings.name, sequence: seen.sequence, duplicate: true))
        }
        var stored = headers
        if let id = conditions.messageID { stored["Nats-Msg-Id"] = id }
        let message = Message(subject: subject, payload: payload, headers: stored, sequence: lastSequence + 1, storedAt: now)
        if let limit = settings.maximumMessageSize, payload.count > limit {
            return .failure(.messageTooLarge(operation: operation))
        }
        if let limit = settings.maximumBytes, bytes + message.size > limit {
            guard settings.whenFull == .dropOldest, message.size <= limit else {
                return .failure(.storeRefused("maximum bytes exceeded", operation: operation))
            }
            var dropped = 0, freed = 0
            while bytes - freed + message.size > limit { freed += messages[dropped].size; dropped += 1 }
            remove(Set(0..<dropped))
        }
        lastSequence += 1
        messages.append(message)
        bytes += message.size
        if let id = conditions.messageID { recentIDs[id] = (lastSequence, now) }
        if let perSubject = settings.maximumMessagesPerSubject {
            let onSubject = messages.indices.filter { messages[$0].subject == subject }
            if onSubject.count > perSubject { remove(Set(onSubject.prefix(onSubject.count - perSubject))) }
        }
        return .success(.init(stream: settings.name, sequence: lastSequence, duplicate: false))
    }

    /// Forgets ids past the duplicate window and messages past the maximum age.
    mutating func expire(now: UnixTime) {
        recentIDs = recentIDs.filter { now - $0.value.at < settings.duplicateWindow }
        if let age = settings.maximumAge {
            let old = messages.indices.filter { now - messages[$0].storedAt >= age }
            if !old.isEmpty { remove(Set(old)) }
        }
    }

    /// Removes the message at `sequence` (a work queue's acknowledged message).
    mutating func remove(sequence: UInt64) {
        if let index = messages.firstIndex(where: { $0.sequence == sequence }) { remove([index]) }
    }

    /// Removes the messages below `sequence`; how many went.
    mutating func purge(below sequence: UInt64) -> Int {
        let below = Set(messages.indices.filter { messages[$0].sequence < sequence })
        remove(below)
        return below.count
    }

    /// Removes the messages on subjects matching `filter`; how many went.
    mutating func purge(matching filter: String) -> Int {
        let pattern = SubjectPattern(filter)
        let matching = Set(messages.indices.filter { pattern.matches(messages[$0].subject) })
        remove(matching)
        return matching.count
    }

    private mutating func remove(_ indices: Set<Int>) {
        guard !indices.isEmpty else { return }
        var kept: [Message] = []
        kept.reserveCapacity(messages.count - indices.count)
        for (index, message) in messages.enumerated() {
            if indices.contains(index) { bytes -= message.size } else { kept.append(message) }
        }
        messages = kept
    }

    /// The messages on subjects matching `filter` from `start` on, in sequence order.
    func messages(matching filter: SubjectPattern, from start: JetStream.DeliveryStart) -> [Message] {
        switch start {
        case .all: return messages.filter { filter.matches($0.subject) }
        case .new: return []
        case .sequence(let first): return messages.filter { $0.sequence >= first && filter.matches($0.subject) }
        case .lastPerSubject:
            var last: [String: Message] = [:]
            for message in messages where filter.matches(message.subject) { last[message.subject] = message }
            return last.values.sorted { $0.sequence < $1.sequence }
        }
    }

    var state: JetStream.StreamState {
        JetStream.StreamState(messages: UInt64(messages.count), bytes: UInt64(bytes),
                              firstSequence: messages.first?.sequence ?? (lastSequence == 0 ? 0 : lastSequence + 1),
                              lastSequence: lastSequence, replicas: settings.replicas, leader: "in-memory")
    }
}
