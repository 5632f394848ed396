import Foundation
import Synchronization
import TouchlineChannels
import TouchlineCore
import TouchlineJetStream
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore

/// Scheduled kickoffs on a cluster (docs/cluster.md, "Scheduled kickoffs on the cluster"): the
/// job waits in the bucket; the owner of its first slice records its start at its time, and a
/// provider's cancellation is a withdrawal that wins only if the bucket holds it before the start
/// (``SharedJobPlan/schedule(of:)``). On the personal loop, like the rest of ``SharedJobs``.
extension SharedJobs {
    /// The answers waiting for a withdrawal to show, and the timer that gives up on it.
    struct Withdrawal {
        var answers: [@Sendable (PersonalDispatcher.Cancellation) -> Void] = []
        var timer: LoopTimer?
    }

    /// How long a provider's cancellation waits for the watch to show what it did.
    static let withdrawalWait: Duration = .seconds(5)

    /// Records a scheduled job's start: its slices run on every gateway once the watch shows it
    /// (unless a cancellation was recorded first).
    func recordStart(_ jobID: String) {
        log.notice("recording the scheduled job's start", job: jobID)
        board.recordStart(jobID: jobID) { [self] result in
            guard case .failure(let error) = result else { return }
            log.error("recording the scheduled job's start failed: \(error); trying again", job: jobID)
            plan.recordStartFailed(jobID)
            retryActingSoon()
        }
    }

    /// A scheduled kickoff's start is recorded (the watch shows it on every gateway): the
    /// gateway owning its channel keeps its audience for the channel's rollovers, as a kickoff
    /// sent at once is kept, and no other gateway finds the channel. A withdrawn one never is.
    func announceStart(of jobID: String) {
        guard case .started? = plan.schedule(of: jobID), cancelled[jobID] == nil, let entry = entries[jobID],
              let channel = Self.inputPushChannel(of: entry) else { return }
        let record = Self.record(of: entry)
        guard let stored = try? StoredJob(record) else { return }
        queue(ofJob: jobID).announceStart(of: record, stored, into: channel)
    }

    /// ``announceStart(of:)`` for every open job started into `apnsChannelID`: the gateway now
    /// owning the channel may not have owned it when the start was recorded.
    func announceStarts(into apnsChannelID: String) {
        for entry in entries.values where entry.startAtNanoseconds != nil && Self.inputPushChannel(of: entry) == apnsChannelID {
            announceStart(of: entry.id)
        }
    }

    /// Moves the cluster's kickoffs waiting for their time into `previous` to `successor` (a
    /// rollover replaced the channel): each entry is stored again naming `successor`, so its
    /// slices start there and closing `previous` does not cancel it. `completion` on the loop
    /// with whether every one was stored (a failure is retried with the rollover's step).
    func moveScheduledStarts(from previous: String, to successor: String, completion: @escaping @Sendable (Bool) -> Void) {
        let moved = entries.values.compactMap { entry -> SharedJobEntry? in
            guard case .waiting? = plan.schedule(of: entry.id), cancelled[entry.id] == nil, Self.inputPushChannel(of: entry) == previous,
                  let payload = LiveActivityPayload.retargeted(Array(entry.payload), from: previous, to: successor) else { return nil }
            var moved = entry
            moved.payload = Data(payload)
            return moved
        }
        guard !moved.isEmpty else { return completion(true) }
        let outstanding = Mutex((remaining: moved.count, failed: false))
        for entry in moved {
            board.replace(entry) { [self] result in
                loop.execute { [self] in
                    if case .failure(let error) = result {
                        log.error("moving the scheduled kickoff to the channel's successor failed: \(error)", job: entry.id)
                    } else {
                        entries[entry.id] = entry
                    }
                    let (remaining, failed) = outstanding.withLock { state in
                        state.remaining -= 1
                        if case .failure = result { state.failed = true }
                        return (state.remaining, state.failed)
                    }
                    if remaining == 0 { completion(!failed) }
                }
            }
        }
    }

    /// Arms the timer for the next scheduled start this gateway records.
    func armStartTimer() {
        guard let next = plan.nextStart else {
            startTimer?.cancel()
            return
        }
        let timer = startTimer ?? LoopTimer(loop: loop) { [weak self] in self?.act() }
        startTimer = timer
        let delay = next - clock.now()
        timer.schedule(after: delay > .zero ? delay : .zero)
    }

    /// The cluster's kickoffs into `apnsChannelID` that wait for their time, earliest first, as
    /// records (on the loop).
    func scheduledStarts(into apnsChannelID: String) -> [PersonalJobRecord] {
        entries.values.compactMap { entry -> PersonalJobRecord? in
            guard case .waiting(let at)? = plan.schedule(of: entry.id), cancelled[entry.id] == nil,
                  Self.inputPushChannel(of: entry) == apnsChannelID else { return nil }
            var record = Self.record(of: entry)
            record.status = .pending
            record.startAt = at
            return record
        }.sorted { ($0.startAt!, $0.id) < ($1.startAt!, $1.id) }
    }

    /// Cancels the cluster's scheduled job `jobID` into `apnsChannelID` if it still waits (on the
    /// loop): a withdrawal recorded in the bucket, answered once the watch shows whether it came
    /// before the job's start (``SharedJobPlan/schedule(of:)``). `answer` on the loop; nil when
    /// the bucket holds no such open job (it may be one of this gateway's own file).
    func cancelScheduled(_ jobID: String, into apnsChannelID: String, answer: @escaping @Sendable (PersonalDispatcher.Cancellation) -> Void) -> Bool {
        guard let entry = entries[jobID], entry.startAtNanoseconds != nil else { return false }
        guard case .waiting? = plan.schedule(of: jobID), cancelled[jobID] == nil,
              Self.inputPushChannel(of: entry) == apnsChannelID else {
            answer(.notWaiting)
            return true
        }
        var withdrawal = withdrawals[jobID] ?? Withdrawal()
        withdrawal.answers.append(answer)
        if withdrawal.timer == nil {
            let timer = LoopTimer(loop: loop) { [weak self] in
                self?.answerWithdrawal(of: jobID, .failed("the cluster has not shown within \(Self.withdrawalWait) whether it came before the start"))
            }
            timer.schedule(after: Self.withdrawalWait)
            withdrawal.timer = timer
            board.withdraw(jobID: jobID) { [weak self] result in
                guard case .failure(let error) = result else { return }
                self?.answerWithdrawal(of: jobID, .failed("\(error)"))
            }
        }
        withdrawals[jobID] = withdrawal
        return true
    }

    private func answerWithdrawal(of jobID: String, _ outcome: PersonalDispatcher.Cancellation) {
        guard let withdrawal = withdrawals.removeValue(forKey: jobID) else { return }
        withdrawal.timer?.cancel()
        for answer in withdrawal.answers { answer(outcome) }
    }

    /// Answers the cancellations of `jobID` sent from here once the watch has settled it.
    func settleWithdrawal(of jobID: String) {
        let outcome: PersonalDispatcher.Cancellation
        switch plan.schedule(of: jobID) {
        case .withdrawn?: outcome = .cancelled
        case .started?: outcome = .notWaiting
        case .waiting?, nil: return
        }
        answerWithdrawal(of: jobID, outcome)
    }
}
