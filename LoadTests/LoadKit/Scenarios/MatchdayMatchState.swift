/// The content-state a match-day channel carries, shaped like a match (score, clock, period,
/// status, cards, shots, possession, the last incident), and the merge patch each event makes
/// of it. Only what an event changes goes into its patch.
struct MatchState {
    let homeCode: String
    let awayCode: String
    private(set) var home = 0
    private(set) var away = 0
    private var homeRedCards = 0
    private var awayRedCards = 0
    private var homeShots = 0
    private var awayShots = 0
    private var homePossession = 50

    init(homeCode: String, awayCode: String) {
        (self.homeCode, self.awayCode) = (homeCode, awayCode)
    }

    /// The state a channel is created with: scheduled, 0-0.
    static let initialMembers = #""status":"scheduled","period":"","clockSeconds":0,"clockRunning":false,"home":0,"away":0,"#
        + #""homeRedCards":0,"awayRedCards":0,"homeShots":0,"awayShots":0,"homePossession":50"#

    private var score: String { "\(homeCode) \(home)-\(away) \(awayCode)" }

    /// Applies one event; `team` is true for the home side, `clockSeconds` is read by clock ticks only.
    mutating func apply(_ kind: MatchdayEvent.Kind, team isHome: Bool, minute: Int, clockSeconds: Int,
                        random: inout SeededRandom) -> (MatchdayImportance, MatchdayAlert?, String) {
        let side = isHome ? "home" : "away"
        let code = isHome ? homeCode : awayCode
        func incident(_ incidentKind: String, _ label: String) -> String {
            #""lastIncident":{"kind":"\#(incidentKind)","team":"\#(side)","minute":\#(minute),"text":"\#(minute)' \#(label) (\#(code))"}"#
        }
        switch kind {
        case .kickoff:
            return (.normal, nil, #""status":"live","period":"1H","clockSeconds":0,"clockRunning":true"#)
        case .clock:
            return (.low, nil, #""clockSeconds":\#(clockSeconds)"#)
        case .stats:
            homePossession = min(70, max(30, homePossession + random.integer(in: -3...3)))
            homeShots += random.integer(in: 0...2)
            awayShots += random.integer(in: 0...2)
            return (.low, nil, #""homePossession":\#(homePossession),"homeShots":\#(homeShots),"awayShots":\#(awayShots)"#)
        case .goal:
            let goals: Int
            let shots: Int
            if isHome {
                (home, homeShots) = (home + 1, homeShots + 1)
                (goals, shots) = (home, homeShots)
            } else {
                (away, awayShots) = (away + 1, awayShots + 1)
                (goals, shots) = (away, awayShots)
            }
            return (.critical, MatchdayAlert(title: "Goal!", body: score),
                    #""\#(side)":\#(goals),"\#(side)Shots":\#(shots),"# + incident("goal", "Goal"))
        case .yellowCard:
            return (.normal, nil, incident("yellow-card", "Yellow card"))
        case .redCard:
            let cards: Int
            if isHome {
                homeRedCards += 1
                cards = homeRedCards
            } else {
                awayRedCards += 1
                cards = awayRedCards
            }
            return (.critical, MatchdayAlert(title: "Red card", body: "\(minute)' Red card (\(code))"),
                    #""\#(side)RedCards":\#(cards),"# + incident("red-card", "Red card"))
        case .substitution:
            return (.normal, nil, incident("substitution", "Substitution"))
        case .halfTime:
            return (.normal, nil, #""status":"break","period":"HT","clockSeconds":2700,"clockRunning":false"#)
        case .secondHalf:
            return (.normal, nil, #""status":"live","period":"2H","clockSeconds":2700,"clockRunning":true"#)
        case .fullTime:
            return (.critical, MatchdayAlert(title: "Full time", body: score),
                    #""status":"finished","clockSeconds":5400,"clockRunning":false"#)
        }
    }
}
