/// The rule that makes "202 means stored" and "nothing reaches APNs that is not on disk" hold
/// for a channel: one write of acknowledged input (events, an end) in the store at a time, and
/// while it is out nothing changes the channel's memory.
///
/// While a write is out:
/// - requests wait (at most ``maximumWaiting``, then they are refused as busy) and all go
///   together in the next write;
/// - engine inputs (APNs answers, timer fires) are held, so a failed write leaves the engine
///   exactly as the last commit did.
///
/// When the write completes, a success releases its pushes (its engine actions) and applies
/// it; a failure releases nothing. Either way the held inputs are fed next, in order, then the
/// waiting requests are written. Pure: `Request` and `Input` are the shell's values.
public struct CommitGate<Request, Input>: Sendable where Request: Sendable, Input: Sendable {
    /// Requests that may wait behind a write; more are refused (the provider should send one
    /// request at a time per channel).
    public static var maximumWaiting: Int { 64 }

    public private(set) var isWriting = false
    public private(set) var waiting: [Request] = []
    public private(set) var held: [Input] = []

    public init() {}

    /// What to do with a request that arrived.
    public enum Admission: Sendable, Equatable {
        /// No write is out: write it now (the caller calls ``writeStarted()``).
        case write
        /// Queued behind the write under way.
        case queued
        /// ``maximumWaiting`` requests already wait: refuse it (503, retry).
        case busy
    }

    public mutating func admit(_ request: Request) -> Admission {
        guard isWriting else { return .write }
        guard waiting.count < Self.maximumWaiting else { return .busy }
        waiting.append(request)
        return .queued
    }

    /// A write was handed to the store.
    public mutating func writeStarted() {
        precondition(!isWriting, "one write per channel at a time")
        isWriting = true
    }

    /// An engine input: true when it may be fed now, false when it is held until the write completes.
    public mutating func pass(_ input: Input) -> Bool {
        guard isWriting else { return true }
        held.append(input)
        return false
    }

    /// What follows a completed write, in order.
    public struct Completion: Sendable {
        /// The write committed: apply it and perform its engine actions (its pushes). False:
        /// answer its requests with the failure and apply nothing.
        public var apply: Bool
        /// Engine inputs held during the write, to feed in order (after applying it).
        public var heldInputs: [Input]
        /// Requests that waited, to validate against what the write left and write together.
        public var nextRequests: [Request]
    }

    public mutating func writeCompleted(succeeded: Bool) -> Completion {
        precondition(isWriting, "no write is out")
        isWriting = false
        defer { held = []; waiting = [] }
        return Completion(apply: succeeded, heldInputs: held, nextRequests: waiting)
    }
}
