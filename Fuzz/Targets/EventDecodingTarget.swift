import TouchlineCore

/// A provider event on any JSON, read for a channel of each sport and of none: decoded or
/// refused with a reason, never a trap; a patch's
/// bounds are checked as the gateway checks them before merging.
enum EventDecodingTarget {
    static func run(_ bytes: [UInt8]) {
        guard let json = try? JSONParser.parse(bytes) else { return }
        for sport in [nil] + Sport.allCases.map(Optional.some) {
            do {
                if case .patch(let patch) = try ContentEvent(json: json, sport: sport) { _ = try? ContentStateLimits.check(patch.patch) }
            } catch {
                require(!error.description.isEmpty, "a refusal without a reason")
            }
        }
    }
}
