/// A sport the gateway folds events for: football, basketball, tennis.
///
/// Each is a ``SportRules``: an event vocabulary with its validation, a content-state, the
/// importance of each kind of event, and the alerts of its critical moments (``AlertKey``).
/// A channel's sport is fixed when it is created (`attributes.sport`).
public enum Sport: String, Sendable, CaseIterable {
    case football
    case basketball
    case tennis

    /// The sport's rules.
    var rules: any SportRules.Type {
        switch self {
        case .football: FootballRules.self
        case .basketball: BasketballRules.self
        case .tennis: TennisRules.self
        }
    }

    /// The event `type`s of the sport, for messages.
    var eventTypes: [String] { rules.eventTypes }
}

/// The rules of one sport, pure: parse and validate its events, fold them into its content-state
/// and say how much each change matters. Everything time-dependent takes `now`.
public protocol SportRules: Sendable {
    associatedtype State: SportState
    associatedtype Event: Sendable & Equatable

    static var sport: Sport { get }
    /// The event `type`s this sport takes.
    static var eventTypes: [String] { get }
    /// The state before the first event.
    static func initialState(_ attributes: MatchAttributes) -> State
    /// One provider event (the `type` and its fields, nothing else but `seq` and `importance`).
    static func event(json: JSONValue) throws(EventValidationError) -> Event
    /// The state after `event`, the importance of the change (before any override the provider
    /// gave), and the alert for its critical moments; throws when the event cannot apply to
    /// this state (a tennis point after the match).
    static func apply(_ event: Event, to state: State, attributes: MatchAttributes, alerts: AlertMode,
                      now: UnixTime) throws(EventValidationError) -> SportChange<State>
    /// One line for operators: "ARS 2-1 CHE, 2H 67'".
    static func summary(_ state: State, _ attributes: MatchAttributes) -> String
}

/// A sport's content-state: read from the JSON the app decodes (validated, unknown members
/// refused) and written back to it.
public protocol SportState: Sendable, Equatable {
    init(json: JSONValue) throws(EventValidationError)
    var json: JSONValue { get }
}

/// What one event did.
public struct SportChange<State: SportState>: Sendable {
    public var state: State
    public var importance: Importance
    public var alert: LiveActivityAlert?

    public init(state: State, importance: Importance, alert: LiveActivityAlert? = nil) {
        (self.state, self.importance, self.alert) = (state, importance, alert)
    }
}

/// A sports event as posted, parsed by the rules of the channel's sport, with the importance
/// the provider gave to override the default.
public struct SportEvent: Sendable, Equatable {
    public enum Parsed: Sendable, Equatable {
        case football(MatchEvent)
        case basketball(BasketballEvent)
        case tennis(TennisEvent)
    }

    public var parsed: Parsed
    public var importanceOverride: Importance?

    /// The members every event may carry besides its own: `seq`, validated by the caller.
    static let envelope: Set<JSONMemberName> = ["seq"]

    /// Parses a provider event by `sport`'s vocabulary. An event `type` of another sport is
    /// named as such ("'goal' is a football event; a tennis channel takes ...").
    public init(json: JSONValue, sport: Sport) throws(EventValidationError) {
        guard case .object = json else { throw EventValidationError(field: nil, "event must be a JSON object") }
        guard case .string(let type)? = json[member: "type"] else {
            throw EventValidationError(field: "type", json[member: "type"] == nil ? "missing field 'type'"
                                           : "field 'type' must be a string naming the event")
        }
        guard sport.eventTypes.contains(type) else {
            let listing = EventFields.listing(sport.eventTypes)
            if let other = Sport.allCases.first(where: { $0 != sport && $0.eventTypes.contains(type) }) {
                throw EventValidationError(field: "type", "field 'type' '\(type)' is a \(other.rawValue) event; a \(sport.rawValue) channel takes \(listing)")
            }
            throw EventValidationError(field: "type", "field 'type' must be \(listing)")
        }
        var fields = try EventFields(json, what: "event", envelope: Self.envelope)
        importanceOverride = try fields.choice("importance", Importance.self)
        switch sport {
        case .football: parsed = .football(try FootballRules.event(json: json))
        case .basketball: parsed = .basketball(try BasketballRules.event(json: json))
        case .tennis: parsed = .tennis(try TennisRules.event(json: json))
        }
    }
}

/// A sports channel's rules at work: its attributes, its alert mode, and the sport's rules,
/// over content-states kept as JSON (as the store and the engine keep them).
public struct SportsChannel: Sendable {
    public var attributes: MatchAttributes
    public var alertMode: AlertMode

    public init(attributes: MatchAttributes, alertMode: AlertMode = .text) {
        self.attributes = attributes
        self.alertMode = alertMode
    }

    public var sport: Sport { attributes.sport }

    /// The state before the first event.
    public var initialState: JSONValue {
        func initial<R: SportRules>(_: R.Type) -> JSONValue { R.initialState(attributes).json }
        return initial(sport.rules)
    }

    /// `state` read as the sport's content-state and written back (members in their order);
    /// throws naming what does not fit.
    public func validated(state: JSONValue) throws(EventValidationError) -> JSONValue {
        func validated<R: SportRules>(_: R.Type) throws(EventValidationError) -> JSONValue { try R.State(json: state).json }
        return try validated(sport.rules)
    }

    /// Parses an event by the channel's sport.
    public func event(json: JSONValue) throws(EventValidationError) -> SportEvent {
        try SportEvent(json: json, sport: sport)
    }

    /// Folds `event` into `state`; the provider's importance, if given, wins over the sport's.
    public func apply(_ event: SportEvent, to state: JSONValue, now: UnixTime) throws(EventValidationError)
        -> (state: JSONValue, importance: Importance, alert: LiveActivityAlert?) {
        func run<R: SportRules>(_ rules: R.Type, _ parsed: R.Event) throws(EventValidationError) -> (JSONValue, Importance, LiveActivityAlert?) {
            let change = try R.apply(parsed, to: try R.State(json: state), attributes: attributes, alerts: alertMode, now: now)
            return (change.state.json, event.importanceOverride ?? change.importance, change.alert)
        }
        switch event.parsed {
        case .football(let parsed) where sport == .football: return try run(FootballRules.self, parsed)
        case .basketball(let parsed) where sport == .basketball: return try run(BasketballRules.self, parsed)
        case .tennis(let parsed) where sport == .tennis: return try run(TennisRules.self, parsed)
        default: throw EventValidationError(field: "type", "the event is not a \(sport.rawValue) event")
        }
    }

    /// One line for operators; nil when `state` is not this sport's.
    public func summary(of state: JSONValue) -> String? {
        func summary<R: SportRules>(_: R.Type) -> String? { (try? R.State(json: state)).map { R.summary($0, attributes) } }
        return summary(sport.rules)
    }
}
