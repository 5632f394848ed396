import APNs
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// Performs what a channel's ``ChannelLifecycle`` asks for (store the create intent, ask APNs,
/// save the id, answer the waiting creates, delete at APNs with back-off) and feeds back what
/// happened. The rules (intent before APNs, one APNs channel per channel, deletion until
/// confirmed) are the lifecycle's, tested in virtual time; this is only I/O.
extension ChannelService {
    typealias Lifecycle = ChannelLifecycle<HTTPRequest>

    /// Gives the channel's lifecycle `input` (through its machine) and performs what follows.
    func lifecycle(_ input: Lifecycle.Input, of channel: Channel) {
        handle(.lifecycle(input), of: channel)
    }

    func perform(_ action: Lifecycle.Action, on channel: Channel) {
        switch action {
        case .saveIntent:
            store.createChannel(channel.creationRecord) { [self] result in
                loop.execute { [self] in lifecycle(.intentSaved(Self.stored(result.map { _ in })), of: channel) }
            }
        case .createAtAPNs where channel.isShadow:
            createShadow(channel)
        case .createAtAPNs:
            dispatcher(of: channel).createChannel(storage: channel.storage, fence: sideEffectFence(of: channel)) { [self] result in
                guard channels[channel.id] === channel else { return }
                switch result {
                case .success(let apnsID): lifecycle(.apnsCreated(apnsID), of: channel)
                case .failure(let error):
                    lifecycle(.apnsCreateFailed("\(error)", limitReached: error.reason == .cannotCreateChannelConfig), of: channel)
                }
            }
        case .saveAPNsID(let apnsID):
            let adopting = if case .adopting = channel.lifecycle.stage { true } else { false }
            store.submit(WriteBatch([.channelCreated(channelID: channel.id, apnsChannelID: apnsID, at: clock.now())])) { [self] result in
                loop.execute { [self] in
                    if adopting {
                        switch result {
                        case .success: log.notice("adopted APNs channel \(apnsID) from a create whose answer was lost", channel: channel.id)
                        case .failure(let error): log.error("saving the adopted APNs channel \(apnsID) failed", channel: channel.id, error: error)
                        }
                    }
                    lifecycle(.idSaved(Self.stored(result)), of: channel)
                }
            }
        case .openKickoffs(let apnsID):
            if !channel.isShadow { personal(of: channel).openKickoffs(into: apnsID) }
        case .answerCreated(let waiters):
            let body = channel.json(now: clock.now())
            for (index, waiter) in waiters.enumerated() { waiter.respond(.json(status: index == 0 ? 201 : 200, body)) }
        case .answerExisting(let waiter):
            waiter.respond(.json(status: 200, channel.json(now: clock.now())))
        case .answerRefused(let waiters, let refusal):
            let response = Self.refusal(refusal).response
            for waiter in waiters { waiter.respond(response) }
        case .forget:
            if channels[channel.id] === channel {
                channels[channel.id] = nil
                recordingLedger.remove(channel.id)
            }
        case .reportChannelLimit:
            webhooks?.channelLimitReached(channelID: channel.id)
        case .deleteAtAPNs where channel.isShadow:
            deleteShadow(channel)
        case .deleteAtAPNs(let apnsID):
            deleteAtAPNs(apnsID, of: channel)
        case .armDeletionRetry(let delay):
            // The machine arms the timer.
            log.warning("deleting APNs channel \(channel.apnsChannelID ?? "") failed; trying again in \(delay.inSeconds) s", channel: channel.id)
        case .abandonDeletion(let apnsID):
            log.error("APNs refused to delete channel \(apnsID) for good; it is left to an operator", channel: channel.id)
        case .saveStatus:
            // The machine saves the status it leads to (``ChannelMachine/Action/saveStatus(_:)``).
            break
        }
    }

    /// Closes the channel's kickoffs (no start naming it may still be on its way), then asks
    /// APNs to delete it: a confirmed deletion, or `ChannelNotRegistered` (already gone), ends it.
    private func deleteAtAPNs(_ apnsID: String, of channel: Channel) {
        guard !isStopping, channels[channel.id] === channel else { return }
        personal(of: channel).closeKickoffs(into: apnsID) { [self] in
            loop.execute { [self] in
                guard !isStopping, channels[channel.id] === channel else { return }
                dispatcher(of: channel).deleteChannel(apnsID, fence: sideEffectFence(of: channel)) { [self] result in
                    guard channels[channel.id] === channel else { return }
                    switch result {
                    case .success:
                        lifecycle(.deletionConfirmed, of: channel)
                    case .failure(let error) where error.disposition == .channelGone:
                        lifecycle(.deletionConfirmed, of: channel)
                    case .failure(let error):
                        log.warning("APNs did not delete channel \(apnsID)", channel: channel.id, apnsID: error.requestID, error: error)
                        lifecycle(.deletionFailed(retryable: error.disposition != .drop), of: channel)
                    }
                }
            }
        }
    }

    /// A store result as the lifecycle takes it.
    private static func stored(_ result: Result<Void, StoreError>) -> Result<Void, Lifecycle.StoreFailure> {
        result.mapError { Lifecycle.StoreFailure("\($0)", isStorageFailure: $0.isStorageFailure) }
    }

    /// The answer to creates the lifecycle refused.
    private static func refusal(_ refusal: Lifecycle.Refusal) -> HTTPError {
        switch refusal {
        case .intentNotSaved(let failure):
            HTTPError.writeFailed(failure, saving: "the channel")
        case .idNotSaved(let failure):
            HTTPError.writeFailed(failure, saving: "the APNs channel id")
        case .apnsRefused(_, limitReached: true):
            HTTPError(status: 409, code: "channel_limit",
                      message: "APNs refused to create another channel (CannotCreateChannelConfig): the app's channel limit is reached")
        case .apnsRefused(let message, limitReached: false):
            HTTPError(status: 502, code: "apns_error", message: "APNs did not create the channel: \(message)")
        }
    }
}
