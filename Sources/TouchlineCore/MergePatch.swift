extension JSONValue {
    /// This value with an RFC 7396 JSON merge patch applied: the generic way a provider
    /// updates a channel's content-state without the gateway knowing its shape.
    ///
    /// A non-object patch replaces the value; an object patch merges member by member, `null`
    /// removing a member. Existing members keep their position and new ones are appended, so
    /// the encoded state stays stable from one push to the next.
    ///
    /// Linear in the size of the state plus the patch: members are found through an index of
    /// names (by code units, ``JSONMemberName``) once an object is more than a handful of
    /// members, and removals leave a hole that is closed once at the end, so no member is
    /// searched for or moved more than once per level.
    public func applyingMergePatch(_ patch: JSONValue) -> JSONValue {
        guard case .object(let patchMembers) = patch else { return patch }
        let existing: [Member] = if case .object(let existing) = self { existing } else { [] }
        // The usual patch (a few members into a small state) is merged in place.
        guard existing.count + patchMembers.count > MemberFinder.indexThreshold else {
            return .object(Self.mergedSmall(existing, patchMembers))
        }
        var members = existing.map(Optional.some)
        var finder = MemberFinder(members)
        var removed = 0
        for change in patchMembers {
            let position = finder.position(of: change.name, in: members)
            switch (position, change.value) {
            case (let position?, .null):
                members[position] = nil
                finder.forget(change.name)
                removed += 1
            case (nil, .null):
                continue
            case (let position?, let value):
                members[position]!.value = members[position]!.value.applyingMergePatch(value)
            case (nil, let value):
                members.append(Member(change.name, JSONValue.null.applyingMergePatch(value)))
                finder.remember(change.name, at: members.count - 1)
            }
        }
        return .object(removed == 0 ? members.map { $0! } : members.compactMap { $0 })
    }

    /// A merge of a few members: searched one by one and removed at once, with no index and no
    /// holes (a handful of members is cheaper to search than to index).
    private static func mergedSmall(_ existing: [Member], _ changes: [Member]) -> [Member] {
        var members = existing
        for change in changes {
            let position = members.firstIndex { $0.isNamed(change.name) }
            switch (position, change.value) {
            case (let position?, .null): members.remove(at: position)
            case (nil, .null): continue
            case (let position?, let value): members[position].value = members[position].value.applyingMergePatch(value)
            case (nil, let value): members.append(Member(change.name, JSONValue.null.applyingMergePatch(value)))
            }
        }
        return members
    }

    /// The value of the member `name` of an object (the first, should names repeat); `nil` for
    /// a missing member or a value that is not an object. Names compare by code units.
    public subscript(member name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.isNamed(name) }?.value
    }
}

/// Finds an object's members by name during one merge: a linear scan while the object is
/// small (no allocation for the usual few-member patch), an index once it is not.
private struct MemberFinder {
    static let indexThreshold = 16
    private var index: [JSONMemberName: Int]?

    init(_ members: [JSONValue.Member?]) {
        guard members.count > Self.indexThreshold else { return }
        index = Self.makeIndex(members)
    }

    mutating func position(of name: String, in members: [JSONValue.Member?]) -> Int? {
        if let index { return index[JSONMemberName(name)] }
        if members.count > Self.indexThreshold {
            let built = Self.makeIndex(members)
            index = built
            return built[JSONMemberName(name)]
        }
        return members.firstIndex { $0?.isNamed(name) == true }
    }

    mutating func remember(_ name: String, at position: Int) {
        if index != nil, index![JSONMemberName(name)] == nil { index![JSONMemberName(name)] = position }
    }

    mutating func forget(_ name: String) {
        index?[JSONMemberName(name)] = nil
    }

    /// The first position of each name (a repeated name keeps its first, like `subscript(member:)`).
    private static func makeIndex(_ members: [JSONValue.Member?]) -> [JSONMemberName: Int] {
        var index: [JSONMemberName: Int] = [:]
        index.reserveCapacity(members.count)
        for (position, member) in members.enumerated() {
            guard let member else { continue }
            let name = JSONMemberName(member.name)
            if index[name] == nil { index[name] = position }
        }
        return index
    }
}
