import APNs
import Foundation
import TouchlineAccess
import TouchlineConfiguration
import TouchlineCore
import TouchlinePersonal
import TouchlineRuntime
import TouchlineStore

/// Carries a match past Apple's 8-hour limit on a Live Activity: performs what the channel's
/// ``ActivityRollover`` asks for and reports back (the rules, the order and what a restart does
/// are the rollover's, tested in virtual time; docs/channel-engine.md, "Past the 8-hour limit").
///
/// - `persist` saves the channel's settings, and what follows it in the same list waits for
///   that commit (a failed save is a failed step, retried with back-off);
/// - the successor is created like any channel (same storage policy) and saved as the channel's
///   APNs channel in one commit with the rollover;
/// - the audiences are started with jobs of the personal queue (push-to-start to the followers
///   of each topic the channel was kicked off to, with that kickoff's attributes and alert,
///   `input-push-channel` the successor, the current state), whose ids follow from the channel,
///   the generation and the topic, so a restart finds them stored;
/// - the previous channel's end is one push at priority 10, dismissed at once; then the previous
///   APNs channel is deleted (its kickoffs closed first).
///
/// A rollover needs the match's audience (a kickoff on the channel) and a live match; it never
/// runs on shadow channels (nothing at APNs to move). On a cluster it runs at the channel's
/// owner like its pushes: every APNs step is taken only while the gateway acts for the channel
/// (a lapsed lease fails the step, retried with back-off, by when the lease is renewed or the
/// channel has moved), and the next owner resumes the saved step as a restart does.
extension ChannelService {
    /// `POST /v1/channels/{id}/rollover`: a rollover now, whatever the activities' age.
    func startRollover(_ call: APICall) throws(HTTPError) {
        let channel = try channel(call)
        let key = try call.caller.requiredKey()
        let now = clock.now()
        for action in decide(.rolloverRequested(storeWritable: !store.health.isFailing), of: channel) {
            switch action {
            case .refuseRollover(let refusal):
                throw rolloverRefusal(refusal, of: channel, key: key, now: now)
            case .beginRollover(let save):
                do throws(HTTPError) {
                    try keyQuotas.takeStart(for: key, now: now)
                } catch {
                    // Not begun: the rollover is as it was.
                    handle(.rolloverSaved(save, succeeded: false), of: channel)
                    throw error
                }
                begin(save, of: channel, answering: call.request)
            default:
                perform(action, on: channel)
            }
        }
    }

    /// Saves the operator's rollover: 202 once it is saved, from then on it completes, across restarts.
    private func begin(_ save: Machine.RolloverSave, of channel: Channel, answering request: HTTPRequest) {
        saveRollover(of: channel) { [self] result in
            if case .failure(let error) = result {
                handle(.rolloverSaved(save, succeeded: false), of: channel)
                request.respond(HTTPError.writeFailed(error, saving: "the rollover").response)
                return
            }
            request.respond(.json(status: 202, channel.json(now: clock.now())))
            handle(.rolloverSaved(save, succeeded: true), of: channel)
        }
    }

    /// The answer to an operator's rollover that does not begin.
    private func rolloverRefusal(_ refusal: Machine.RolloverRefusal, of channel: Channel, key: GatewayConfiguration.APIKey,
                                 now: UnixTime) -> HTTPError {
        switch refusal {
        case .shadowChannel:
            return HTTPError(status: 409, code: "shadow_channel", message: "channel '\(channel.id)' is a shadow channel: it has no APNs channel to roll over")
        case .noLiveMatch:
            return HTTPError(status: 409, code: "channel_not_active",
                             message: "channel '\(channel.id)' is \(channel.status.rawValue): there is no live match to roll over")
        case .noAudience:
            return HTTPError(status: 409, code: "no_kickoff",
                             message: "channel '\(channel.id)' has had no kickoff sent yet (POST /v1/channels/{id}/start; a scheduled one counts from its time), "
                                + "so no audience is known to start on a new channel")
        case .storeFailing:
            do throws(HTTPError) { try requireWritableStore() } catch { return error }
            return HTTPError(status: 503, code: "store_unavailable", message: "the store cannot write; nothing was stored, retry the same request",
                             headers: [("Retry-After", "1")])
        case .underWay:
            return HTTPError(status: 409, code: "rollover_in_progress", message: "channel '\(channel.id)' is rolling over already")
        case .tooSoon(let earliest):
            keyQuotas.count(.rolloverInterval, for: key)
            let seconds = KeyQuotas.wholeSeconds(until: earliest, from: now)
            return HTTPError(status: 429, code: "rollover_too_soon",
                             message: "channel '\(channel.id)' rolled over less than \(keyQuotas.settings.rolloverInterval.inSeconds.formatted()) s ago "
                                + "(keyLimits.rolloverIntervalSeconds); the next may begin in \(seconds) s",
                             headers: [("Retry-After", String(seconds))])
        }
    }

    /// Saves the channel's settings (its rollover with them); `completion` on the loop, unless the
    /// channel was deleted or let go meanwhile.
    func saveRollover(of channel: Channel, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        store.submit(WriteBatch([.updateState(channel.settingsUpdate(at: clock.now()))])) { [self] result in
            loop.execute { [self] in
                guard channels[channel.id] === channel else { return }
                completion(result)
            }
        }
    }

    /// A kickoff into `apnsChannelID` is stored to be sent now, or a scheduled one started: its
    /// audience is kept for the channel's rollovers (the latest per topic). Only then: a start
    /// still waiting for its time, or cancelled, is nobody's audience yet. Any thread; nothing
    /// happens when no channel here publishes on `apnsChannelID` (any more).
    package func rememberKickoff(_ kickoff: KickoffTemplate, into apnsChannelID: String) {
        loop.execute { [self] in
            guard let channel = channels.values.first(where: { $0.apnsChannelID == apnsChannelID && !$0.isShadow }) else { return }
            rememberKickoff(kickoff, of: channel)
        }
    }

    private func rememberKickoff(_ kickoff: KickoffTemplate, of channel: Channel) {
        let audiences = KickoffTemplate.remembering(kickoff, in: channel.kickoffs)
        guard audiences != channel.kickoffs else { return }
        channel.kickoffs = audiences
        submitSave([.updateState(channel.settingsUpdate(at: clock.now()))], of: channel, what: "the channel's kickoff")
        handle(.audienceKnown, of: channel)
    }

    // MARK: Actions

    /// Performs a rollover's call to APNs or the job queue and reports how it went.
    func perform(_ call: Machine.RolloverCall, on channel: Channel) {
        switch call {
        case .createSuccessor:
            dispatcher(of: channel).createChannel(storage: channel.storage, fence: sideEffectFence(of: channel)) { [self] result in
                guard channels[channel.id] === channel else { return }
                switch result {
                case .success(let successor):
                    log.notice("rolling over to APNs channel \(successor)", channel: channel.id)
                    handle(.rolloverStep(.successorCreated(successor)), of: channel)
                case .failure(let error):
                    log.warning("creating the rollover's APNs channel failed", channel: channel.id, apnsID: error.requestID, error: error)
                    handle(.rolloverStep(.failed), of: channel)
                }
            }
        case .switchTo(let successor):
            let batch = WriteBatch([.channelCreated(channelID: channel.id, apnsChannelID: successor, at: clock.now()),
                                    .updateState(channel.settingsUpdate(at: clock.now()))])
            store.submit(batch) { [self] result in
                loop.execute { [self] in
                    guard channels[channel.id] === channel else { return }
                    handle(.rolloverStep(result.isSuccess ? .switched(to: successor) : .failed), of: channel)
                }
            }
        case .startAudience(let generation):
            moveScheduledStarts(of: channel) { [self] in startAudience(of: channel, generation: generation) }
        case .endPrevious(let previous, let push):
            dispatcher(of: channel).broadcast(push, on: previous) { [self] result in
                guard channels[channel.id] === channel else { return }
                if case .failure(let error) = result, error.disposition != .channelGone {
                    log.warning("ending the activities of the previous APNs channel \(previous) failed", channel: channel.id,
                                apnsID: error.requestID, error: error)
                    return handle(.rolloverStep(.failed), of: channel)
                }
                handle(.rolloverStep(.previousEnded), of: channel)
            }
        case .deletePrevious(let previous):
            personal(of: channel).closeKickoffs(into: previous) { [self] in
                loop.execute { [self] in
                    dispatcher(of: channel).deleteChannel(previous, fence: sideEffectFence(of: channel)) { [self] result in
                        guard channels[channel.id] === channel else { return }
                        if case .failure(let error) = result, error.disposition != .channelGone {
                            log.warning("deleting the previous APNs channel \(previous) failed", channel: channel.id, apnsID: error.requestID, error: error)
                            return handle(.rolloverStep(.failed), of: channel)
                        }
                        log.notice("rolled over: generation \(channel.rollover.generation) on \(channel.apnsChannelID ?? "")", channel: channel.id)
                        handle(.rolloverStep(.previousDeleted), of: channel)
                    }
                }
            }
        case .deleteUnneeded(let apnsID):
            dispatcher(of: channel).deleteChannel(apnsID, fence: sideEffectFence(of: channel)) { [self] result in
                if case .failure(let error) = result, error.disposition != .channelGone {
                    log.warning("deleting APNs channel \(apnsID), created for a match that has ended, failed", channel: channel.id, error: error)
                }
            }
        }
    }

    /// Moves the channel's kickoffs still waiting for their time from the previous APNs channel
    /// to its new one, then `next` (on the loop): they start at their time into the channel that
    /// replaced theirs, and closing the previous one does not cancel them. A failed move fails
    /// the step (retried with back-off; moving again is harmless).
    private func moveScheduledStarts(of channel: Channel, then next: @escaping @Sendable () -> Void) {
        guard let previous = channel.rollover.previousChannel, let current = channel.apnsChannelID else { return next() }
        personal(of: channel).moveScheduledStarts(from: previous, to: current) { [self] moved in
            loop.execute { [self] in
                guard channels[channel.id] === channel else { return }
                guard moved else {
                    log.warning("moving the kickoffs scheduled into the previous APNs channel failed; the step is tried again", channel: channel.id)
                    return handle(.rolloverStep(.failed), of: channel)
                }
                next()
            }
        }
    }

    /// Stores the jobs that start the match's audiences (one per kicked-off topic) on the
    /// channel's (new) APNs channel in one commit, with ids of this generation and topic; a job
    /// stored already (before a restart) counts as stored.
    private func startAudience(of channel: Channel, generation: Int) {
        guard let apnsID = channel.apnsChannelID, let audienceStarter, !channel.kickoffs.isEmpty else {
            log.warning("the rollover has no audience to start (no kickoff); the previous activities are ended", channel: channel.id)
            return handle(.rolloverStep(.audienceStarted), of: channel)
        }
        let now = clock.now()
        var jobs: [PersonalJobRecord] = []
        for kickoff in channel.kickoffs {
            do {
                let payload = try kickoff.startPayload(contentState: channel.contentState, into: apnsID, now: now)
                jobs.append(PersonalJobRecord(id: Self.rolloverJobID(channel.id, generation: generation, follows: kickoff.follows), createdAt: now,
                                              audience: String(decoding: PersonalAudience.follows(kickoff.follows).json.encoded, as: UTF8.self),
                                              payload: payload, priority: kickoff.priority, expiration: now + Self.rolloverStartLifetime,
                                              app: channel.app))
            } catch {
                log.error("the rollover's start for \(kickoff.follows) cannot be built: \(error.message); that audience is not started", channel: channel.id)
            }
        }
        audienceStarter(jobs) { [self] stored in
            guard channels[channel.id] === channel else { return }
            handle(.rolloverStep(stored ? .audienceStarted : .failed), of: channel)
        }
    }

    /// A start later than this after the rollover would be stale: its targets expire instead.
    static let rolloverStartLifetime = Duration.seconds(30 * 60)

    /// The id of a generation's start job for one topic: the same after a restart, so it is
    /// stored once, and known to whoever follows the rollover's jobs.
    package static func rolloverJobID(_ channelID: String, generation: Int, follows: String) -> String {
        "job-rollover-\(SHA256.hex(Array(channelID.utf8)).prefix(24))-\(generation)-\(SHA256.hex(Array(follows.utf8)).prefix(12))"
    }
}
