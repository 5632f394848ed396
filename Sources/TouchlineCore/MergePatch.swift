extension JSONValue {
    /// This value with an RFC 7396 JSON merge patch applied: the generic way a provider
    /// updates a channel's content-state without the gateway knowing its shape.
    ///
    /// A non-object patch replaces the value; an object patch merges member by member, `null`
    /// removing a member. Existing members keep their position and new ones are appended, so
    /// the encoded state stays stable from one push to the next.
    public func applyingMergePatch(_ patch: JSONValue) -> JSONValue {
        guard case .object(let patchMembers) = patch else { return patch }
        var members: [Member] = if case .object(let existing) = self { existing } else { [] }
        for change in patchMembers {
            let position = members.firstIndex { $0.name == change.name }
            switch (position, change.value) {
            case (let position?, .null): members.remove(at: position)
            case (nil, .null): continue
            case (let position?, let value): members[position].value = members[position].value.applyingMergePatch(value)
            case (nil, let value): members.append(Member(change.name, JSONValue.null.applyingMergePatch(value)))
            }
        }
        return .object(members)
    }

    /// The value of the member `name` of an object (the first, should names repeat); `nil` for
    /// a missing member or a value that is not an object.
    public subscript(member name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.name == name }?.value
    }
}
