import Dispatch
import NATS
import Synchronization
import TouchlineRuntime
import TouchlineStore

extension RegistrySnapshotMarker {
    /// The snapshot's parts, read from `subject` of `stream` from the marker's first part on and
    /// joined; nil when they are no longer all there (``readParts(from:of:jetStream:loop:into:)``).
    /// The whole snapshot is held in memory: for the shared registry's rows.
    func readParts(from subject: String, of stream: String, jetStream: any JetStreamClient, loop: EventLoop) throws -> [UInt8]? {
        let bytes = Mutex<[UInt8]>([])
        let whole = try readParts(from: subject, of: stream, jetStream: jetStream, loop: loop) { part in bytes.withLock { $0 += part } }
        return whole ? bytes.withLock { $0 } : nil
    }

    /// Hands the snapshot's parts, read from `subject` of `stream` from the marker's first part on,
    /// one after another to `sink` (on `loop`); true once every part went, false when they are no
    /// longer all there (a newer snapshot's trim removed them), or when what is there is not this
    /// snapshot's parts one after another. What `sink` throws ends the reading and is thrown.
    /// At most a few parts are held at once. Blocks.
    func readParts(from subject: String, of stream: String, jetStream: any JetStreamClient, loop: EventLoop,
                   into sink: @escaping @Sendable ([UInt8]) throws -> Void) throws -> Bool {
        enum Progress { case reading(SnapshotParts.Order?), complete, gone, failed(any Error) }
        let progress = Mutex(Progress.reading(nil))
        let done = DispatchSemaphore(value: 0)
        let window = DeliveryWindow(size: 4)
        let (firstPart, parts) = (firstPart, parts)
        let subscription = try jetStream.subscribeOrdered(to: subject, from: .sequence(firstPart), loop: loop, window: window) { message in
            defer { window.release() }
            guard let sequence = message.stream?.sequence,
                  let header = message.headers[RegistryLogLayout.snapshotHeader].flatMap(SnapshotParts.parse) else { return }
            let finished = progress.withLock { progress -> Bool in
                guard case .reading(let order) = progress else { return false }
                var next: SnapshotParts.Order
                if let order {
                    next = order
                    guard next.take(index: header.index, at: sequence) else { progress = .gone; return true }
                } else {
                    guard sequence == firstPart, header == (1, parts) else { progress = .gone; return true }
                    next = SnapshotParts.Order(count: header.count, firstPartAt: sequence)
                }
                do {
                    try sink(message.payload)
                } catch {
                    progress = .failed(error)
                    return true
                }
                progress = next.isComplete ? .complete : .reading(next)
                return next.isComplete
            }
            if finished { done.signal() }
        }
        defer { window.close(); subscription.cancel() }
        guard done.wait(timeout: .now() + .seconds(60)) == .success else {
            throw StoreError.storageFailure("the token registry snapshot at \(stream) sequence \(firstPart) was not read within 60 s")
        }
        switch progress.withLock({ $0 }) {
        case .complete: return true
        case .failed(let error): throw error
        case .reading, .gone: return false
        }
    }
}
