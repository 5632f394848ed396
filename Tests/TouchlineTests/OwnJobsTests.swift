import Synchronization
import Testing
import TouchlineCore
import TouchlinePersonal

/// The job board of a gateway on its own (``OwnJobs``): its jobs are in its file and run by its
/// apps' queues, so it holds no shared slices; a save of one answers that nothing was stored.
@Suite struct OwnJobsTests {
    @Test func aSliceSaveIsRefusedNotAnsweredAsStored() throws {
        let key = SharedJobPlan.SliceKey(jobID: "job-1", slice: try #require(AudienceSlice(index: 0, count: 1)))
        let checkpoint = FanOutCheckpoint(cursor: nil, counters: FanOutCounters(), pending: [], endedAfterCursor: [])
        let answer = Mutex<Result<Int, any Error>?>(nil)
        OwnJobs().save(key, checkpoint: checkpoint, isFinished: true, writes: []) { result in answer.withLock { $0 = result } }
        let result = try #require(answer.withLock { $0 }, "the save was never answered")
        #expect(throws: OwnJobs.NoSharedSlices.self) { try result.get() }
        #expect(OwnJobs().slicesStarted == 0)
    }
}
