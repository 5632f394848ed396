/// Football as a ``SportRules``: the events of ``MatchEvent``, the state ``MatchContentState``,
/// folded by ``FootballReducer``.
public enum FootballRules: SportRules {
    public static let sport = Sport.football
    public static var eventTypes: [String] { MatchEvent.types }

    public static func initialState(_ attributes: MatchAttributes) -> MatchContentState { .initial }

    public static func event(json: JSONValue) throws(EventValidationError) -> MatchEvent { try MatchEvent(json: json) }

    public static func apply(_ event: MatchEvent, to state: MatchContentState, attributes: MatchAttributes, alerts: AlertMode,
                             now: UnixTime) -> SportChange<MatchContentState> {
        let folded = FootballReducer(attributes: attributes, alertMode: alerts).apply(event, to: state, at: now)
        return SportChange(state: folded.state, importance: folded.importance, alert: folded.alert)
    }

    /// "ARS 1-0 CHE, 2H 67'", "ARS 0-0 CHE, not started".
    public static func summary(_ match: MatchContentState, _ attributes: MatchAttributes) -> String {
        var line = "\(attributes.homeCode) \(match.homeScore)-\(match.awayScore) \(attributes.awayCode)"
        switch match.status {
        case .scheduled: line += ", not started"
        case .finished: line += ", full time"
        case .break: line += ", \(match.period.isEmpty ? "break" : match.period)"
        case .live: line += ", \(match.period.isEmpty ? "" : match.period + " ")\(match.clockSeconds / 60)'"
        }
        return line
    }
}

extension MatchContentState: SportState {}
