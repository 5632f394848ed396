import Foundation
import LoadKit
import Synchronization

/// Channels created, given an event, and then kept, ended or deleted, one after another for the
/// whole run, as a provider opens and closes matches: each request is repeated until answered
/// (a create with the same id and body, which is idempotent; an end or delete, whose repeat
/// after a lost answer may find the first one done: 409 `channel_ended`, 404 `channel_not_found`).
///
/// Ended channels have a grace period of one second, so their APNs channels are deleted during
/// the run: the checks then find them deleted at APNs, and kept ones still there, once each.
struct SoakChannelChurn {
    enum Fate: Sendable { case keep, end, delete }

    /// Seconds between two channels.
    let interval: Double
    let seed: UInt64

    static let policy = #"{"minimumIntervalSeconds":0.25,"burst":3,"endGracePeriodSeconds":1}"#

    static func id(_ number: Int) -> String { String(format: "soak-churn-%05d", number) }

    /// Runs on the calling thread until `stop` is set (the channel under way is finished first).
    func run(client: GatedClient, ledger: SoakLedger, tally: SoakTally, stop: StopFlag) {
        var random = SeededRandom(seed: seed)
        var due = monotonicNanoseconds()
        for number in 1... {
            if stop.isSet { return }
            let id = Self.id(number)
            let fate: Fate = switch random.integer(in: 0...9) {
            case 0...3: .keep
            case 4...6: .end
            default: .delete
            }
            guard cycle(id, fate: fate, client: client, ledger: ledger, tally: tally, stop: stop) else { return }
            due += Int64(interval * 1e9)
            sleep(untilMonotonic: due)
        }
    }

    /// One channel's life; false when the run stopped before it was complete.
    private func cycle(_ id: String, fate: Fate, client: GatedClient, ledger: SoakLedger, tally: SoakTally, stop: StopFlag) -> Bool {
        ledger.add(id, churned: true, life: .createAsked)
        let create = Array(#"{"id":"\#(id)","storagePolicy":"no-storage","policy":\#(Self.policy)}"#.utf8)
        guard let created = tally.complete("POST /v1/channels (\(id))", success: [200, 201], stop: stop, {
            client.send("POST", "/v1/channels", body: create)
        }) else { return false }
        guard let apnsID = created.json?.string("apnsChannelId") else {
            tally.violation("create of \(id) answered \(created.status) without an apnsChannelId: \(created.text.prefix(200))")
            return false
        }
        ledger.saw(id, apnsID: apnsID)
        ledger.setLife(id, .active)
        ledger.sending(id, upTo: 1)
        guard tally.complete("POST /v1/channels/\(id)/events", success: [202], stop: stop, {
            client.send("POST", "/v1/channels/\(id)/events", body: SoakEventTraffic.body(1...1))
        }) != nil else { return false }
        ledger.acknowledged(id, upTo: 1)
        tally.eventsAcknowledged(1)
        switch fate {
        case .keep:
            return true
        case .end:
            ledger.setLife(id, .endAsked)
            let end = Array(#"{"dismissAt":\#(Int(Date().timeIntervalSince1970) + 60)}"#.utf8)
            guard tally.complete("POST /v1/channels/\(id)/end", success: [202], tolerated: ["channel_ended"], stop: stop, {
                client.send("POST", "/v1/channels/\(id)/end", body: end)
            }) != nil else { return false }
            ledger.setLife(id, .ended)
        case .delete:
            ledger.setLife(id, .deleteAsked)
            guard tally.complete("DELETE /v1/channels/\(id)", success: [200], tolerated: ["channel_not_found"], stop: stop, {
                client.send("DELETE", "/v1/channels/\(id)")
            }) != nil else { return false }
            ledger.setLife(id, .deleted)
        }
        return true
    }
}
