import Testing
import TouchlineCore

@Suite struct ContentStateLimitsTests {
    static func nested(_ levels: Int) -> JSONValue {
        (1..<levels).reduce(JSONValue.object([])) { inner, _ in .object([.init("a", inner)]) }
    }

    @Test func depthIsBoundedSoThePushStaysUnderTheParsersLimit() throws {
        try ContentStateLimits.check(Self.nested(ContentStateLimits.maximumDepth))
        #expect(throws: ContentStateLimits.Violation.self) { try ContentStateLimits.check(Self.nested(ContentStateLimits.maximumDepth + 1)) }
        // The deepest accepted state, wrapped as the push wraps it, still parses with the default limit.
        let push: JSONValue = ["aps": ["content-state": Self.nested(ContentStateLimits.maximumDepth)]]
        #expect(throws: Never.self) { try JSONParser.parse(push.encoded) }
    }

    @Test func valuesAreCountedAtEveryLevel() throws {
        let flat = JSONValue.object((0..<ContentStateLimits.maximumValues).map { .init("m\($0)", .null) })
        try ContentStateLimits.check(flat)
        let over = JSONValue.array([flat, .integer(1)])
        #expect { try ContentStateLimits.check(over) } throws: { error in
            (error as? ContentStateLimits.Violation)?.description == "holds more than 1000 members and array elements in all"
        }
        // A scalar is always within the limits.
        try ContentStateLimits.check(.string("x"))
    }
}
