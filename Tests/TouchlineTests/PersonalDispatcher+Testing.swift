import Synchronization
import Testing
import TestSlots
import TouchlineCore
@testable import TouchlinePersonal
import TouchlineStore

extension PersonalDispatcher {
    /// Resumes `stored` with `openChannels` open (kickoffs may name them) and waits until the
    /// resume is done: the queue then takes jobs as after a gateway's start.
    func resumed(_ stored: [PersonalJobRecord] = [], openChannels: Set<String> = []) async throws {
        let done = Mutex(false)
        resumeStoredJobs(stored, openChannels: openChannels) { _ in done.withLock { $0 = true } }
        try await eventually("the resume done") { done.withLock { $0 } }
    }

    /// Runs `record`'s whole audience as its one slice, from the start, with no fence (as the
    /// cluster's job board would on the owner of a single partition).
    func runAsOneSlice(_ record: PersonalJobRecord) throws {
        let key = SharedJobPlan.SliceKey(jobID: record.id, slice: try #require(AudienceSlice(index: 0, count: 1)))
        try loop.sync { [self] in
            try runSlice(key, of: record, checkpoint: FanOutCheckpoint(cursor: nil, counters: FanOutCounters(), pending: [], endedAfterCursor: []),
                         maximumWindow: 100, expiredAt: nil, fence: nil)
        }
    }
}
