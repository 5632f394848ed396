import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Scheduled kickoffs (`POST /v1/channels/{id}/start` with `at`): the job is stored `pending`
/// with its `startAt` and waits here, on the personal loop, until then; a restart finds it in the
/// store again. Cancelling stores it done before its time (``PersonalJobRecord/wasCancelled``),
/// only while it still waits, so a start is either cancelled or sent, never both.
extension PersonalDispatcher {
    /// What a cancellation found.
    package enum Cancellation: Sendable, Equatable {
        case cancelled
        /// It is no longer waiting: started (or finished), or not a scheduled job of this gateway.
        case notWaiting
        case failed(String)
    }

    /// Cancels the scheduled job `jobID` (a start into `apnsChannelID`, when given) if it still
    /// waits: stored done before its time, then `answer` (on the personal loop). A failed write leaves it
    /// waiting. Any thread.
    package func cancelScheduled(_ jobID: String, into apnsChannelID: String? = nil, answer: @escaping @Sendable (Cancellation) -> Void) {
        loop.execute { [self] in
            guard let start = scheduled.remove(jobID) else {
                // On a cluster, a start waits in the job bucket (one of this gateway's own file, a migrated one, waits here).
                if let apnsChannelID, jobBoard.cancelScheduled(jobID, into: apnsChannelID, answer: answer) { return }
                return answer(.notWaiting)
            }
            if let apnsChannelID, start.inputPushChannel != apnsChannelID {
                scheduled.add(start.record, inputPushChannel: start.inputPushChannel)
                return answer(.notWaiting)
            }
            // Finished before its time: cancelled (``PersonalJobRecord/wasCancelled``).
            let progress = PersonalJobProgress(jobID: jobID, cursor: nil, counts: start.record.counts, status: .done,
                                               at: min(clock.now(), UnixTime(nanoseconds: start.at.nanoseconds - 1)))
            store.submit([.advanceJob(progress)]) { [self] result in
                loop.execute { [self] in
                    switch result {
                    case .success:
                        answer(.cancelled)
                    case .failure(let error):
                        scheduled.add(start.record, inputPushChannel: start.inputPushChannel)
                        answer(.failed("\(error)"))
                    }
                }
            }
        }
    }

    /// Moves the kickoffs waiting for their time into `previous` to `successor`, the APNs
    /// channel that replaced it (a rollover): their stored payloads name `successor` from then
    /// on, so they start there at their time, and closing `previous` does not cancel them. On a
    /// cluster the job bucket's are moved too (``PersonalJobBoard/moveScheduledStarts(from:to:completion:)``).
    /// `completion` on the personal loop with whether all are stored moved; a failed write
    /// leaves the rest waiting into `previous` (moving them again is harmless). Any thread.
    package func moveScheduledStarts(from previous: String, to successor: String, completion: @escaping @Sendable (Bool) -> Void) {
        loop.execute { [self] in
            let moved = scheduled.starts(into: previous).compactMap { start -> PersonalJobRecord? in
                guard let payload = LiveActivityPayload.retargeted(start.record.payload, from: previous, to: successor) else { return nil }
                var record = start.record
                record.payload = payload
                return record
            }
            let local: (@escaping @Sendable (Bool) -> Void) -> Void = { [self] done in
                guard !moved.isEmpty else { return done(true) }
                store.submit(moved.map { .retargetScheduledJob(jobID: $0.id, payload: $0.payload) }) { [self] result in
                    loop.execute { [self] in
                        guard case .success = result else { return done(false) }
                        for record in moved where scheduled.remove(record.id) != nil { scheduled.add(record, inputPushChannel: successor) }
                        done(true)
                    }
                }
            }
            local { [self] stored in
                guard stored else { return completion(stored) }
                jobBoard.moveScheduledStarts(from: previous, to: successor, completion: completion)
            }
        }
    }

    /// The kickoffs waiting to start into `apnsChannelID`, earliest first, this gateway's and
    /// (on a cluster) the job bucket's (`answer` on the personal loop). Any thread.
    package func scheduledStarts(into apnsChannelID: String, answer: @escaping @Sendable ([PersonalJobRecord]) -> Void) {
        loop.execute { [self] in
            let starts = scheduled.starts(into: apnsChannelID).map(\.record) + jobBoard.scheduledStarts(into: apnsChannelID)
            answer(starts.sorted { ($0.startAt ?? $0.createdAt, $0.id) < ($1.startAt ?? $1.createdAt, $1.id) })
        }
    }

    /// Arms the timer for the next start due (on the loop).
    func armScheduleTimer() {
        guard !isStopping, let next = scheduled.next else { return }
        let timer = scheduleTimer ?? LoopTimer(loop: loop) { [self] in
            for start in scheduled.takeDue(at: clock.now()) { run(start.record) }
            armScheduleTimer()
        }
        scheduleTimer = timer
        let delay = next - clock.now()
        timer.schedule(after: delay > .zero ? delay : .zero)
    }
}
