import Dispatch
import NATS
import Synchronization
import TouchlineRuntime
import TouchlineStore

extension RegistrySnapshotMarker {
    /// The snapshot's parts, read from `subject` of `stream` from the marker's first part on and
    /// joined; nil when they are no longer all there (a newer snapshot's trim removed them), or
    /// when what is there is not this snapshot's parts one after another. Blocks.
    func readParts(from subject: String, of stream: String, jetStream: any JetStreamClient, loop: EventLoop) throws -> [UInt8]? {
        enum Progress { case reading(SnapshotParts.Reading?), complete([UInt8]), gone }
        let progress = Mutex(Progress.reading(nil))
        let done = DispatchSemaphore(value: 0)
        let window = DeliveryWindow(size: 4)
        let (firstPart, parts) = (firstPart, parts)
        let subscription = try jetStream.subscribeOrdered(to: subject, from: .sequence(firstPart), loop: loop, window: window) { message in
            defer { window.release() }
            guard let sequence = message.stream?.sequence,
                  let header = message.headers[RegistryLogLayout.snapshotHeader].flatMap(SnapshotParts.parse) else { return }
            let finished = progress.withLock { progress -> Bool in
                guard case .reading(let reading) = progress else { return false }
                var next: SnapshotParts.Reading
                if let reading {
                    next = reading
                    guard next.add(message.payload, index: header.index, at: sequence) else { progress = .gone; return true }
                } else {
                    guard sequence == firstPart, header == (1, parts) else { progress = .gone; return true }
                    next = SnapshotParts.Reading(count: header.count, firstPart: message.payload, at: sequence)
                }
                progress = next.isComplete ? .complete(next.bytes) : .reading(next)
                return next.isComplete
            }
            if finished { done.signal() }
        }
        defer { window.close(); subscription.cancel() }
        guard done.wait(timeout: .now() + .seconds(60)) == .success else {
            throw StoreError.storageFailure("the token registry snapshot at \(stream) sequence \(firstPart) was not read within 60 s")
        }
        return progress.withLock { progress in
            if case .complete(let bytes) = progress { bytes } else { nil }
        }
    }
}
