import TouchlineCore
import TouchlineStore

/// Kickoffs accepted with `at` that wait for their time, on the personal loop: stored `pending`
/// with their `startAt`, so a restart finds them again (``PersonalDispatcher/resumeStoredJobs``).
struct ScheduledStarts {
    /// One waiting start and the channel it subscribes its activities to.
    struct Start {
        var record: PersonalJobRecord
        var inputPushChannel: String?
        var at: UnixTime { record.startAt ?? record.createdAt }
    }

    private var waiting: [String: Start] = [:]

    mutating func add(_ record: PersonalJobRecord, inputPushChannel: String?) {
        waiting[record.id] = Start(record: record, inputPushChannel: inputPushChannel)
    }

    /// Removes and returns the job's start, if it still waits.
    mutating func remove(_ jobID: String) -> Start? {
        waiting.removeValue(forKey: jobID)
    }

    /// Removes and returns the starts due at `now`, earliest first.
    mutating func takeDue(at now: UnixTime) -> [Start] {
        let due = waiting.values.filter { $0.at <= now }.sorted { ($0.at, $0.record.id) < ($1.at, $1.record.id) }
        for start in due { waiting[start.record.id] = nil }
        return due
    }

    /// When the next start is due.
    var next: UnixTime? { waiting.values.map(\.at).min() }

    /// The starts into `apnsChannelID`, earliest first.
    func starts(into apnsChannelID: String) -> [Start] {
        waiting.values.filter { $0.inputPushChannel == apnsChannelID }.sorted { ($0.at, $0.record.id) < ($1.at, $1.record.id) }
    }
}
