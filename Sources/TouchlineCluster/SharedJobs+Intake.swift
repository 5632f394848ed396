import Synchronization
import TouchlineChannels
import TouchlineCore
import TouchlineJetStream
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore

/// The cluster's job bucket as the gateway's job board: new jobs of any gateway are stored
/// there, and their slices run at the owners of their partitions (docs/cluster.md, "Personal
/// jobs on the cluster").
extension SharedJobs: PersonalJobBoard {
    /// Repeats sent to any gateway find the same jobs: their ids come from the key.
    var namesJobsByKey: Bool { true }

    func storeRolloverStarts(_ jobs: [PersonalJobRecord], through intake: PersonalJobIntake, completion: @escaping @Sendable (Bool) -> Void) {
        createMissing(jobs, answerLoop: intake.loop, completion: completion)
    }

    func store(_ jobs: [PersonalJobRecord], then operations: [TokenOperation], through intake: PersonalJobIntake, for request: HTTPRequest,
               answer: JSONValue, idempotency claim: IdempotencyClaim?, settled: (@Sendable (_ stored: Bool) -> Void)?) {
        intake.submitSharedJobs(jobs, to: self, then: operations, for: request, answer: answer, idempotency: claim, settled: settled)
    }
}

extension PersonalJobIntake {
    /// A cluster gateway's ``submitPersonalJobs(_:with:for:answer:idempotency:settled:)``: the
    /// jobs are stored in the cluster's job bucket first (that is when they are durable and will
    /// run, whichever gateway survives), then `operations` (the idempotency record, a replay's
    /// marks) in this gateway's file, then the 202. A failure before the last step answers 503
    /// (docs/cluster.md, "Personal jobs on the cluster", on what a retry then does). With an
    /// `Idempotency-Key`, the job ids come from the key, so the bucket tells whether any gateway
    /// took the request before; the first job's entry holds its answer for repeats.
    fileprivate func submitSharedJobs(_ jobs: [PersonalJobRecord], to shared: SharedJobs, then operations: [TokenOperation],
                                  for request: HTTPRequest, answer: JSONValue, idempotency claim: IdempotencyClaim?,
                                  settled: (@Sendable (_ stored: Bool) -> Void)?) {
        if let claim, let first = jobs.first {
            // A repeat sent to any gateway names the same first job (its id comes from the key):
            // if the bucket has it, the request was answered before.
            return shared.idempotentAnswer(of: first.id, answerLoop: loop) { [self] stored in
                guard let stored else {
                    let record = IdempotentAnswer(requestHash: WebhookSignature.hex(claim.requestHash), status: 202,
                                                  response: String(decoding: answer.encoded, as: UTF8.self))
                    return createSharedJobs(jobs, in: shared, idempotency: record, then: operations, for: request, answer: record.response,
                                            claim: claim, settled: settled)
                }
                idempotencyKeys.inFlight.remove(claim.slot)
                settled?(false)
                do throws(HTTPError) {
                    request.respond(try IdempotencyClaim.replay(status: stored.status, response: Array(stored.response.utf8),
                                                                sameRequest: stored.requestHash == WebhookSignature.hex(claim.requestHash), for: claim))
                } catch {
                    request.respond(error.response)
                }
            }
        }
        createSharedJobs(jobs, in: shared, idempotency: nil, then: operations, for: request, answer: String(decoding: answer.encoded, as: UTF8.self),
                         claim: claim, settled: settled)
    }

    /// Stores `jobs` in the cluster's bucket (the first with the idempotent request's answer),
    /// then `operations` in this gateway's file, then answers 202 with `answer`. A first job the
    /// bucket had already (a repeat racing the first request, within its duplicate window) is
    /// answered 409: the repeat's retry finds the first's answer.
    private func createSharedJobs(_ jobs: [PersonalJobRecord], in shared: SharedJobs, idempotency: IdempotentAnswer?,
                                  then operations: [TokenOperation], for request: HTTPRequest, answer: String,
                                  claim: IdempotencyClaim?, settled: (@Sendable (_ stored: Bool) -> Void)?) {
        let remaining = Mutex(jobs.count)
        let firstFailure = Mutex<(any Error)?>(nil)
        let raced = Mutex(false)
        let finish: @Sendable () -> Void = { [self] in
            if let error = firstFailure.withLock({ $0 }) {
                if let claim { idempotencyKeys.inFlight.remove(claim.slot) }
                settled?(false)
                let failure = (error as? StoreError) ?? StoreError.storageFailure("the cluster did not store the job: \(error)")
                request.respond(HTTPError.writeFailed(failure, saving: "the job").response)
                return
            }
            if let claim, raced.withLock({ $0 }) {
                idempotencyKeys.inFlight.remove(claim.slot)
                settled?(false)
                request.respond(IdempotencyClaim.inUse(claim).response)
                return
            }
            personalStore.submit(operations) { [self] result in
                if case .success = result { idempotentCommitSucceeded(claim) }
                loop.execute { [self] in
                    if let claim { idempotencyKeys.inFlight.remove(claim.slot) }
                    // The jobs are in the bucket and run, whatever this gateway's file says.
                    settled?(true)
                    switch result {
                    case .success:
                        request.respond(HTTPResponse(status: 202, headers: [("Content-Type", "application/json")], body: Array(answer.utf8)))
                    case .failure(let error): request.respond(HTTPError.writeFailed(error, saving: "the job").response)
                    }
                }
            }
        }
        guard !jobs.isEmpty else { return finish() }
        for (index, job) in jobs.enumerated() {
            shared.create(job, idempotency: index == 0 ? idempotency : nil, answerLoop: loop) { result in
                switch result {
                case .success(let stored): if index == 0, !stored, idempotency != nil { raced.withLock { $0 = true } }
                case .failure(let error): firstFailure.withLock { if $0 == nil { $0 = error } }
                }
                if remaining.withLock({ $0 -= 1; return $0 }) == 0 { finish() }
            }
        }
    }
}
