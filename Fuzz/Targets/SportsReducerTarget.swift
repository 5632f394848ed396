import TouchlineCore

/// Sports events folded one after another (JSON documents, one per line; a first line that is
/// a state of the sport starts from it), by the rules of every sport in turn, each result
/// validated as the gateway validates it before accepting it: a valid result reads back to
/// exactly itself and fits the content-state bounds; an event the rules refuse leaves the state
/// as it was, as the gateway answers 422.
enum SportsReducerTarget {
    static func run(_ bytes: [UInt8]) {
        let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: true).map(Array.init)
        for sport in Sport.allCases {
            let attributes = MatchAttributes(sport: sport, homeName: "Arsenal", homeCode: "ARS", awayName: "Chelsea", awayCode: "CHE",
                                             competition: "Premier League", kickoff: 1_767_290_400)
            for mode in AlertMode.allCases { fold(lines[...], SportsChannel(attributes: attributes, alertMode: mode)) }
        }
    }

    private static func fold(_ lines: ArraySlice<[UInt8]>, _ sports: SportsChannel) {
        var lines = lines
        var state = sports.initialState
        if let first = lines.first, let json = try? JSONParser.parse(first), let given = try? sports.validated(state: json) {
            state = given
            lines = lines.dropFirst()
        }
        for (index, line) in lines.prefix(64).enumerated() {
            guard let json = try? JSONParser.parse(line), let event = try? sports.event(json: json),
                  let folded = try? sports.apply(event, to: state, now: UnixTime(seconds: 1_767_290_400 + Int64(index) * 7)) else { continue }
            // A result outside the state's bounds (a score past 999) is refused, as the gateway does.
            guard let readBack = try? sports.validated(state: folded.state) else { continue }
            require(readBack == folded.state, "a folded \(sports.sport) state does not read back to itself")
            require((try? ContentStateLimits.check(folded.state)) != nil, "a valid \(sports.sport) state is outside the content-state bounds")
            state = readBack
        }
    }
}
