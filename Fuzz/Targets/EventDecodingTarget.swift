import TouchlineCore

/// A provider event on any JSON: decoded or refused with a reason, never a trap; a patch's
/// bounds are checked as the gateway checks them before merging.
enum EventDecodingTarget {
    static func run(_ bytes: [UInt8]) {
        guard let json = try? JSONParser.parse(bytes) else { return }
        do {
            if case .patch(let patch) = try ContentEvent(json: json) { _ = try? ContentStateLimits.check(patch.patch) }
        } catch {
            require(!error.description.isEmpty, "a refusal without a reason")
        }
    }
}
