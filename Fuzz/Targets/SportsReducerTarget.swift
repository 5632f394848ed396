import TouchlineCore

/// Sports events folded one after another (JSON documents, one per line; a first line that is
/// a match state starts from it), each result validated as the gateway validates it before
/// accepting it: a valid result reads back to exactly itself and fits the content-state
/// bounds; an invalid one is refused and the state stays, as the gateway answers 422.
enum SportsReducerTarget {
    static let attributes = MatchAttributes(homeName: "Arsenal", homeCode: "ARS", awayName: "Chelsea", awayCode: "CHE",
                                           competition: "Premier League", kickoff: 1_767_290_400)

    static func run(_ bytes: [UInt8]) {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: true).map(Array.init)[...]
        var state = MatchContentState.initial
        if let first = lines.first, let json = try? JSONParser.parse(first), let given = try? MatchContentState(json: json) {
            state = given
            lines = lines.dropFirst()
        }
        let reducer = SportsReducer(attributes: attributes)
        for (index, line) in lines.prefix(64).enumerated() {
            guard let json = try? JSONParser.parse(line), let event = try? SportsEvent(json: json) else { continue }
            let folded = reducer.apply(event, to: state, at: UnixTime(seconds: 1_767_290_400 + Int64(index) * 7))
            guard let readBack = try? MatchContentState(json: folded.state.json) else { continue }
            require(readBack == folded.state, "a folded state does not read back to itself")
            require((try? ContentStateLimits.check(folded.state.json)) != nil, "a valid match state is outside the content-state bounds")
            state = readBack
        }
    }
}
