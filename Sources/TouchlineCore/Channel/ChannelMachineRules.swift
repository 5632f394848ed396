/// What a ``ChannelMachine`` needs from the shell's request format: how a list of events and
/// end requests becomes one acknowledged write of the channel.
///
/// Validating a request is pure (the reducer, merge patch and the engine's own checks), but its
/// wording (HTTP bodies and error answers) is the shell's; the machine only decides when a write
/// is built, against which state, and what happens once the store has answered it.
public protocol ChannelMachineRules: Sendable {
    /// An events or end request as the shell holds it (with what answers it).
    associatedtype Request: Sendable
    /// A create request waiting for the channel's create to settle (``ChannelLifecycle``).
    associatedtype Waiter: Sendable
    /// What the shell lends a write when it is built (a recording's room in the gateway's quota).
    associatedtype Room: Sendable
    associatedtype Write: ChannelMachineWrite

    /// Validates `requests` in order, each on top of the ones before, against the channel as the
    /// last commit left it; a refused request is kept in the write to be answered, and changes
    /// nothing. `status` is the status the channel would have with an engine (for an end).
    func write(_ requests: [Request], on state: ChannelMachineState, room: Room, now: UnixTime,
               status: (ChannelEngine) -> ChannelStatus) -> Write

    /// True for a sports channel, whose feed counts as live while its state says `live` (any
    /// other channel's from its first event to its end).
    var followsMatchStatus: Bool { get }
}

/// The part of a channel an acknowledged write changes: what the store's `updateState` holds.
public struct ChannelMachineState: Sendable {
    public var engine: ChannelEngine
    /// The full current content-state (also before the first push).
    public var contentState: JSONValue
    /// The highest provider `seq` applied (0 before the first event).
    public var lastSeq: Int64

    public init(engine: ChannelEngine, contentState: JSONValue, lastSeq: Int64) {
        self.engine = engine
        self.contentState = contentState
        self.lastSeq = lastSeq
    }
}

/// One acknowledged write as the machine sees it: the state it leaves and what it asks for.
public protocol ChannelMachineWrite: Sendable {
    /// Nothing to store: every request held only duplicates, stale events or refusals.
    var isEmpty: Bool { get }
    /// The channel as it is once the write commits.
    var state: ChannelMachineState { get }
    /// The `seq` of every new event, ascending (the feed watch looks at them).
    var acceptedSeqs: [Int64] { get }
    /// What the engine asked for while the write was built; performed only once it commits.
    var engineActions: [ChannelEngine.Action] { get }
    /// The status an end in the write leaves; nil when no request ended the channel.
    var endedStatus: ChannelStatus? { get }
}
