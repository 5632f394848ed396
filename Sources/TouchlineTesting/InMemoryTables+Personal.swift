import TouchlineCore
import TouchlineStore

/// The personal side's operations (``TokenOperation``), with the rules docs/storage.md gives
/// for the SQLite store: token replacement, the 410 timestamp rule, job progress written whole,
/// dead letters keyed by job and token, idempotency records held until they expire.
extension InMemoryTables {
    /// Applies `operation`; answers the tokens it deactivated (0 or 1, `.deactivateToken` only).
    mutating func apply(_ operation: TokenOperation) throws(StoreError) -> Int {
        switch operation {
        case .registerToken(let record):
            register(record)
        case .deleteToken(let token):
            tokens[token.lowercased()] = nil
        case .deactivateToken(let token, let apnsTimestamp, let at):
            let key = token.lowercased()
            guard var stored = tokens[key], stored.active, stored.registeredAt <= apnsTimestamp else { return 0 }
            stored.active = false
            stored.deactivatedAt = at
            tokens[key] = stored
            return 1
        case .noteUserToken:
            // A whole registry's registrations replace the user's tokens themselves.
            break
        case .supersedeToken(let replaced, let registeredBefore):
            guard var stored = tokens[replaced.token], stored.active, stored.userID == replaced.userID, stored.kind == replaced.kind,
                  replaced.kind == .update ? stored.channelID == replaced.channelID : stored.app == replaced.app,
                  stored.registeredAt <= registeredBefore else { break }
            stored.active = false
            stored.deactivatedAt = registeredBefore
            tokens[replaced.token] = stored
        case .createJob(let job):
            guard jobs[job.id] == nil else { throw .refused("UNIQUE constraint failed: personal_jobs.id") }
            var stored = job
            stored.unreadable = nil
            jobs[job.id] = stored
        case .advanceJob(let progress):
            guard var job = jobs[progress.jobID] else { throw .refused("unknown personal job \"\(progress.jobID)\"") }
            job.cursor = progress.cursor ?? job.cursor
            job.status = progress.status ?? job.status
            job.counts = progress.counts
            job.updatedAt = progress.at
            job.endedAfterCursor = progress.endedAfterCursor
            jobs[progress.jobID] = job
        case .retargetScheduledJob(let jobID, let payload):
            if jobs[jobID]?.status == .pending { jobs[jobID]?.payload = payload }
        case .scheduleRetry(let retry):
            try requireJob(retry.jobID)
            targets[JobToken(jobID: retry.jobID, token: retry.token)] = Target(state: .retry, attempts: retry.attempts, retryAt: retry.retryAt)
        case .clearTarget(let jobID, let token):
            targets[JobToken(jobID: jobID, token: token)] = nil
        case .deadLetter(let letter):
            let key = JobToken(jobID: letter.jobID, token: letter.token)
            let id = deadLetterIDs[key] ?? lastDeadLetterID + 1
            lastDeadLetterID = max(lastDeadLetterID, id)
            deadLetters[id] = DeadLetterRecord(id: id, jobID: letter.jobID, token: letter.token, reason: letter.reason, status: letter.status,
                                               at: letter.at)
            deadLetterIDs[key] = id
            try requireJob(letter.jobID)
            targets[key] = Target(state: .deadLettered, attempts: targets[key]?.attempts ?? 0, retryAt: nil)
        case .markReplayed(let ids):
            for id in ids {
                guard var letter = deadLetters[id], letter.status == .dead else {
                    throw .refused("dead letter \(id) is unknown or was already replayed")
                }
                letter.status = .replayed
                deadLetters[id] = letter
            }
        case .recordStarts(let channel, let tokens):
            generationStarts[channel, default: []].formUnion(tokens.map { $0.lowercased() })
        case .forgetStarts(let channel):
            generationStarts[channel] = nil
        case .webhook(let operation):
            channelTables.apply(operation)
        case .rememberIdempotencyKey(let record):
            let key = IdempotencyKey(scope: record.scope, route: record.route, key: record.key)
            if let held = idempotency[key], held.expiresAt > record.createdAt {
                throw .refused("idempotency key \"\(record.key)\" on \(record.route) is held by another request")
            }
            idempotency[key] = record
        case .pruneIdempotencyKeys(let expiredBy, let limit):
            let doomed = idempotency.filter { $0.value.expiresAt <= expiredBy }.sorted { $0.value.expiresAt < $1.value.expiresAt }
                .prefix(max(0, limit))
            for (key, _) in doomed { idempotency[key] = nil }
        }
        return 0
    }

    private func requireJob(_ id: String) throws(StoreError) {
        guard jobs[id] != nil else { throw .refused("FOREIGN KEY constraint failed: personal_targets.job_id (\(id))") }
    }

    /// Upserts the token (active again, new registration and follows) and deactivates the one it
    /// replaces: the user's other active update token of the same channel, or the user's other
    /// active push-to-start token of the same app. A token without a user replaces nothing.
    private mutating func register(_ record: TokenRecord) {
        if let userID = record.userID {
            for (token, other) in tokens where token != record.token && other.active && other.userID == userID && other.kind == record.kind
                && (record.kind == .pushToStart ? other.app == record.app : other.channelID == record.channelID) {
                var replaced = other
                replaced.active = false
                replaced.deactivatedAt = record.registeredAt
                tokens[token] = replaced
            }
        }
        var stored = record
        stored.active = true
        stored.deactivatedAt = nil
        stored.follows = Set(record.follows).sorted(by: ChannelTables.precedes)
        tokens[record.token] = stored
    }
}
