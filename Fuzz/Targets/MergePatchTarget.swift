import TouchlineCore

/// RFC 7396 merge of two documents (a state and a patch, split at the first NUL): the indexed
/// merge gives what the RFC's member-by-member reading gives, and applying a patch twice gives
/// what applying it once gives.
enum MergePatchTarget {
    static func run(_ bytes: [UInt8]) {
        let (stateBytes, patchBytes) = halves(bytes)
        guard let state = try? JSONParser.parse(stateBytes), let patch = try? JSONParser.parse(patchBytes) else { return }
        let merged = state.applyingMergePatch(patch)
        require(merged == reference(state, patch), "the merge differs from RFC 7396's reading")
        require(merged.applyingMergePatch(patch) == merged, "merging the same patch twice changed the result")
        _ = try? ContentStateLimits.check(merged)
    }

    /// RFC 7396 §2, searching members one by one (names compared by code units).
    static func reference(_ target: JSONValue, _ patch: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch else { return patch }
        var members: [JSONValue.Member] = if case .object(let existing) = target { existing } else { [] }
        for change in changes {
            let position = members.firstIndex { $0.isNamed(change.name) }
            switch (position, change.value) {
            case (let position?, .null): members.remove(at: position)
            case (nil, .null): continue
            case (let position?, let value): members[position].value = reference(members[position].value, value)
            case (nil, let value): members.append(.init(change.name, reference(.null, value)))
            }
        }
        return .object(members)
    }
}
