/// Folds football events into a match content-state, deciding each update's importance and,
/// for the moments worth lighting a screen, the alert that goes with it.
///
/// Pure: the same state, event and time always give the same result. The alert is a proposal; the
/// channel engine sends it only with a priority-10 push, that is for critical updates while
/// the channel's budget lasts.
public struct FootballReducer: Sendable {
    public var attributes: MatchAttributes
    /// Whether alerts go as English text or as localization keys (``AlertMode``).
    public var alertMode: AlertMode

    public init(attributes: MatchAttributes, alertMode: AlertMode = .text) {
        self.attributes = attributes
        self.alertMode = alertMode
    }

    private var alerts: FootballAlerts { FootballAlerts(attributes: attributes, mode: alertMode) }

    /// - Parameter now: when the gateway received the event; it anchors a running clock
    ///   (`clockStartedAt`) so the app can count on its own between pushes.
    public func apply(_ event: MatchEvent, to state: MatchContentState, at now: UnixTime)
        -> (state: MatchContentState, importance: Importance, alert: LiveActivityAlert?) {
        var state = state
        let alert = fold(event, into: &state, at: Int(now.seconds))
        return (state, event.defaultImportance, alert)
    }

    private func fold(_ event: MatchEvent, into state: inout MatchContentState, at now: Int) -> LiveActivityAlert? {
        switch event {
        case .score(let home, let away):
            state.homeScore = home
            state.awayScore = away
            return nil
        case .period(let label, let clockSeconds, let clockRunning):
            state.period = label
            setClock(clockSeconds, running: clockRunning, in: &state, at: now)
            return nil
        case .clock(let seconds, let running):
            setClock(seconds, running: running, in: &state, at: now)
            return nil
        case .status(let status):
            state.status = status
            switch status {
            case .scheduled: return nil
            case .live: return alerts.kickoff()
            case .break:
                setClock(nil, running: false, in: &state, at: now)
                return nil
            case .finished:
                setClock(nil, running: false, in: &state, at: now)
                return alerts.fullTime(state)
            }
        case .goal(let team, let player, let minute, let ownGoal):
            addGoal(for: team, to: &state)
            record(ownGoal ? .ownGoal : .goal, ownGoal ? "Own goal" : "Goal", team, player, minute, into: &state)
            return alerts.goal(state, penalty: false, scorer: player, minute: minute)
        case .card(let team, let card, let player, let minute):
            switch card {
            case .yellow:
                record(.yellowCard, "Yellow card", team, player, minute, into: &state)
                return nil
            case .red, .secondYellow:
                if team == .home { state.homeRedCards += 1 } else { state.awayRedCards += 1 }
                let incident = record(card == .red ? .redCard : .secondYellow, card == .red ? "Red card" : "Second yellow",
                                      team, player, minute, into: &state)
                return alerts.sendingOff(incident, player: player)
            }
        case .penalty(let team, let outcome, let player, let minute):
            switch outcome {
            case .scored:
                addGoal(for: team, to: &state)
                record(.penaltyScored, "Penalty scored", team, player, minute, into: &state)
                return alerts.goal(state, penalty: true, scorer: player, minute: minute)
            case .missed:
                let incident = record(.penaltyMissed, "Penalty missed", team, player, minute, into: &state)
                return alerts.penaltyMissed(incident, player: player)
            }
        case .substitution(let team, let playerIn, let playerOut, let minute):
            let players: String? = switch (playerIn, playerOut) {
            case (let playerIn?, let playerOut?): "\(playerIn) for \(playerOut)"
            case (let playerIn?, nil): "\(playerIn) on"
            case (nil, let playerOut?): "\(playerOut) off"
            case (nil, nil): nil
            }
            record(.substitution, "Substitution", team, players, minute, into: &state)
            return nil
        case .varDecision(let team, let decision, let minute):
            let label: String
            switch decision {
            case .goalDisallowed:
                if team == .home { state.homeScore = max(0, state.homeScore - 1) } else { state.awayScore = max(0, state.awayScore - 1) }
                label = "VAR: goal disallowed"
            case .goalConfirmed: label = "VAR: goal confirmed"
            case .penaltyAwarded: label = "VAR: penalty awarded"
            case .penaltyCancelled: label = "VAR: penalty cancelled"
            }
            record(.varDecision, label, team, nil, minute, into: &state)
            return decision == .goalDisallowed ? alerts.goalDisallowed(state) : nil
        case .stats(let update):
            if let value = update.homePossession { state.homePossession = value }
            if let value = update.homeShots { state.homeShots = value }
            if let value = update.awayShots { state.awayShots = value }
            if let value = update.homeCorners { state.homeCorners = value }
            if let value = update.awayCorners { state.awayCorners = value }
            return nil
        }
    }

    /// Sets the clock reading and whether it runs. Without a new reading, a running clock is
    /// first brought up to date (so stopping it freezes the time reached). A running clock is
    /// anchored as `clockStartedAt`, the instant it would have shown zero.
    private func setClock(_ seconds: Int?, running: Bool?, in state: inout MatchContentState, at now: Int) {
        if let seconds {
            state.clockSeconds = seconds
        } else if state.clockRunning, let startedAt = state.clockStartedAt {
            state.clockSeconds = max(state.clockSeconds, now - startedAt)
        }
        if let running { state.clockRunning = running }
        state.clockStartedAt = state.clockRunning ? now - state.clockSeconds : nil
    }

    private func addGoal(for team: Team, to state: inout MatchContentState) {
        if team == .home { state.homeScore += 1 } else { state.awayScore += 1 }
    }

    /// Sets the state's last incident, with text like "67' Goal: Saka (ARS)", and returns it.
    @discardableResult
    private func record(_ kind: MatchIncident.Kind, _ label: String, _ team: Team, _ detail: String?, _ minute: Int?,
                        into state: inout MatchContentState) -> MatchIncident {
        var text = minute.map { "\($0)' " } ?? ""
        text += label
        if let detail { text += ": \(detail)" }
        text += " (\(attributes.code(of: team)))"
        let incident = MatchIncident(kind: kind, team: team, minute: minute, text: text)
        state.lastIncident = incident
        return incident
    }
}
