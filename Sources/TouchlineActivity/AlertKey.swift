/// The localization keys of every alert the gateway composes, with the number of arguments each
/// takes: the contract between the gateway's localized alerts and the app's string catalogue.
///
/// One broadcast reaches phones in every language, so in `localized` mode an alert's title and
/// body go as `{"loc-key": key, "loc-args": [...]}` and each phone resolves them in its own
/// language from the app's `Localizable.xcstrings` (shipped beside this file, to be added to the
/// app target: the system looks alert keys up in the app's main bundle). Every key here exists in
/// that catalogue, in every language, with exactly ``argumentCount`` positional arguments
/// (`%1$@`...); a test holds the two together.
///
/// Arguments are always strings: team codes, scores and minutes as text, player names as given.
public enum AlertKey: String, Sendable, CaseIterable {
    // Titles: what happened.
    case footballKickoffTitle = "football.kickoff.title"
    case footballFullTimeTitle = "football.fullTime.title"
    case footballGoalTitle = "football.goal.title"
    case footballPenaltyGoalTitle = "football.penaltyGoal.title"
    case footballRedCardTitle = "football.redCard.title"
    case footballSecondYellowTitle = "football.secondYellow.title"
    case footballPenaltyMissedTitle = "football.penaltyMissed.title"
    case footballGoalDisallowedTitle = "football.goalDisallowed.title"
    // Bodies: the match, the score, the incident.
    /// Home code, away code: "ARS v CHE".
    case footballTeams = "football.teams"
    /// Home code, home score, away score, away code: "ARS 2-1 CHE".
    case footballScore = "football.score"
    /// The score's four, then the scorer: "ARS 2-1 CHE · Saka".
    case footballScoreScorer = "football.score.scorer"
    /// The score's four, the scorer, the minute: "ARS 2-1 CHE · Saka 67'".
    case footballScoreScorerMinute = "football.score.scorerMinute"
    /// Minute, player, team code: "67' Rice (ARS)".
    case footballIncidentMinutePlayer = "football.incident.minutePlayer"
    /// Minute, team code: "67' (ARS)".
    case footballIncidentMinute = "football.incident.minute"
    /// Player, team code: "Rice (ARS)".
    case footballIncidentPlayer = "football.incident.player"
    /// Team code: "ARS".
    case footballIncidentTeam = "football.incident.team"

    // Basketball.
    case basketballTipOffTitle = "basketball.tipOff.title"
    case basketballFinalTitle = "basketball.final.title"
    /// Home code, away code: "GSW v BOS".
    case basketballTeams = "basketball.teams"
    /// Home code, home score, away score, away code: "GSW 102-99 BOS".
    case basketballScore = "basketball.score"
    // Tennis.
    case tennisSetWonTitle = "tennis.setWon.title"
    /// Player code, set number, games won, games lost: "ALC wins set 1, 6-4".
    case tennisSetWon = "tennis.setWon"
    case tennisMatchPointTitle = "tennis.matchPoint.title"
    /// Player code: "Match point for ALC".
    case tennisMatchPoint = "tennis.matchPoint"
    case tennisMatchWonTitle = "tennis.matchWon.title"
    /// Winner's code, the sets from the winner's side: "ALC wins 6-4 3-6 7-6".
    case tennisMatchWon = "tennis.matchWon"

    /// How many `loc-args` the key's format takes.
    public var argumentCount: Int {
        switch self {
        case .footballKickoffTitle, .footballFullTimeTitle, .footballGoalTitle, .footballPenaltyGoalTitle, .footballRedCardTitle,
             .footballSecondYellowTitle, .footballPenaltyMissedTitle, .footballGoalDisallowedTitle, .basketballTipOffTitle,
             .basketballFinalTitle, .tennisSetWonTitle, .tennisMatchPointTitle, .tennisMatchWonTitle:
            0
        case .footballIncidentTeam, .tennisMatchPoint: 1
        case .footballTeams, .footballIncidentMinute, .footballIncidentPlayer, .basketballTeams, .tennisMatchWon: 2
        case .footballIncidentMinutePlayer: 3
        case .footballScore, .basketballScore, .tennisSetWon: 4
        case .footballScoreScorer: 5
        case .footballScoreScorerMinute: 6
        }
    }
}
