import Foundation
import LoadKit

/// One disk-full episode while the load runs: the disk is filled, kept full until the gateway
/// has refused writes for `holding` seconds, then freed, and the gateway must take writes again
/// by itself.
///
/// A real full disk does not fail the next commit at once: SQLite's log reuses room it already
/// has until a checkpoint cannot extend the database, and one store may fail long before the
/// other. So the episode waits (up to 30 s) until a client's write was refused (503
/// `store_unavailable`), filling again every 200 ms (room the gateway gave back), and holds from
/// then on. When `/readyz` first showed a store not writable is recorded beside it.
struct SoakDiskEpisode {
    let mode: DiskFault.Mode
    /// From the fill to the first `/readyz` showing a store not writable (nil: it never did).
    let notWritableAfter: Double?
    /// From the fill to the first client write refused (nil: none was).
    let refusedAfter: Double?
    /// How long the store was seen failing before the disk was freed.
    let heldSeconds: Double
    /// From freeing the disk to `/readyz` 200.
    let recoverySeconds: Double

    init(holding seconds: Double, disk: DiskFault, gateway: RestartableGateway, tally: SoakTally) throws {
        mode = disk.mode
        tally.setDiskFull(true)
        let started = monotonicNanoseconds()
        disk.fill()
        var refused: Int64?, notWritable: Int64?
        let refusedBefore = tally.segments.last?.storeUnavailable ?? 0
        while true {
            let now = monotonicNanoseconds()
            if notWritable == nil, Self.storeFailing(gateway.target) { notWritable = now }
            if refused == nil, (tally.segments.last?.storeUnavailable ?? 0) > refusedBefore { refused = now }
            if let refused, Double(now - refused) / 1e9 >= seconds { break }
            if refused == nil, Double(now - started) / 1e9 > 30 { break }
            Thread.sleep(forTimeInterval: 0.2)
            disk.fill()
        }
        let freed = monotonicNanoseconds()
        refusedAfter = refused.map { Double($0 - started) / 1e9 }
        notWritableAfter = notWritable.map { Double($0 - started) / 1e9 }
        heldSeconds = refused.map { Double(freed - $0) / 1e9 } ?? 0
        disk.free()
        try gateway.waitUntilReady(timeout: 30)
        recoverySeconds = Double(monotonicNanoseconds() - freed) / 1e9
    }

    /// `/readyz` shows the channels' or the personal store not writable.
    private static func storeFailing(_ target: GatewayTarget) -> Bool {
        guard let ready = try? target.connect().send("GET", "/readyz").json else { return false }
        return ready[member: "store"]?[member: "writable"] == .bool(false) || ready[member: "personalStore"]?[member: "writable"] == .bool(false)
    }
}
