import TouchlineActivity

/// The alerts of a football match's critical moments, as text or as localization keys
/// (``AlertKey``) with their arguments, for one match's attributes.
///
/// Both modes carry the same facts: in `text` the title says what happened and the body is the
/// scoreline or the incident's text; in `localized` the title is a key without arguments, and the
/// body a key taking the team codes, score, player and minute known for the moment (a key per
/// combination, so no phone shows an empty argument).
struct FootballAlerts {
    let attributes: MatchAttributes
    let mode: AlertMode

    func kickoff() -> LiveActivityAlert {
        alert(.footballKickoffTitle, "Kick-off",
              body: .footballTeams, [attributes.homeCode, attributes.awayCode], text: "\(attributes.homeCode) v \(attributes.awayCode)")
    }

    func fullTime(_ state: MatchContentState) -> LiveActivityAlert {
        alert(.footballFullTimeTitle, "Full time", body: .footballScore, score(state), text: scoreline(state))
    }

    func goal(_ state: MatchContentState, penalty: Bool, scorer: String?, minute: Int?) -> LiveActivityAlert {
        let (title, titleText): (AlertKey, String) = penalty ? (.footballPenaltyGoalTitle, "Goal! (penalty)") : (.footballGoalTitle, "Goal!")
        switch (scorer, minute) {
        case (let scorer?, let minute?):
            return alert(title, titleText, body: .footballScoreScorerMinute, score(state) + [scorer, String(minute)], text: scoreline(state))
        case (let scorer?, nil):
            return alert(title, titleText, body: .footballScoreScorer, score(state) + [scorer], text: scoreline(state))
        case (nil, _):
            return alert(title, titleText, body: .footballScore, score(state), text: scoreline(state))
        }
    }

    func goalDisallowed(_ state: MatchContentState) -> LiveActivityAlert {
        alert(.footballGoalDisallowedTitle, "Goal disallowed", body: .footballScore, score(state), text: scoreline(state))
    }

    /// A red card or a second yellow: the text title is "Red card" for both, as the incident's
    /// text says which; the localized title says it itself.
    func sendingOff(_ incident: MatchIncident, player: String?) -> LiveActivityAlert {
        let title: AlertKey = incident.kind == .secondYellow ? .footballSecondYellowTitle : .footballRedCardTitle
        return incidentAlert(title, "Red card", incident, player: player)
    }

    func penaltyMissed(_ incident: MatchIncident, player: String?) -> LiveActivityAlert {
        incidentAlert(.footballPenaltyMissedTitle, "Penalty missed", incident, player: player)
    }

    private func incidentAlert(_ title: AlertKey, _ titleText: String, _ incident: MatchIncident, player: String?) -> LiveActivityAlert {
        let team = attributes.code(of: incident.team)
        let (body, arguments): (AlertKey, [String]) = switch (incident.minute, player) {
        case (let minute?, let player?): (.footballIncidentMinutePlayer, [String(minute), player, team])
        case (let minute?, nil): (.footballIncidentMinute, [String(minute), team])
        case (nil, let player?): (.footballIncidentPlayer, [player, team])
        case (nil, nil): (.footballIncidentTeam, [team])
        }
        return alert(title, titleText, body: body, arguments, text: incident.text)
    }

    private func alert(_ title: AlertKey, _ titleText: String, body: AlertKey, _ arguments: [String], text: String) -> LiveActivityAlert {
        mode.alert(title, titleText, body: body, arguments, text: text)
    }

    private func score(_ state: MatchContentState) -> [String] {
        [attributes.homeCode, String(state.homeScore), String(state.awayScore), attributes.awayCode]
    }

    /// "ARS 2-1 CHE".
    private func scoreline(_ state: MatchContentState) -> String {
        "\(attributes.homeCode) \(state.homeScore)-\(state.awayScore) \(attributes.awayCode)"
    }
}
