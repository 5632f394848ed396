import Testing
import TouchlineCore

@Suite struct MergePatchTests {
    /// Applies `patch` to `target`, all three given as JSON text, and compares encoded bytes
    /// (so member order is checked too).
    private func merged(_ target: String, _ patch: String) throws -> String {
        let result = try JSONParser.parse(Array(target.utf8)).applyingMergePatch(try JSONParser.parse(Array(patch.utf8)))
        return String(decoding: result.encoded, as: UTF8.self)
    }

    /// Every example of RFC 7396 Appendix A.
    @Test(arguments: [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ])
    func rfc7396AppendixA(target: String, patch: String, result: String) throws {
        #expect(try merged(target, patch) == result)
    }

    @Test func existingMembersKeepTheirPlaceAndNewOnesAreAppended() throws {
        #expect(try merged(#"{"home":0,"away":0,"clock":"0'"}"#, #"{"last":"Goal","home":1,"clock":null}"#)
            == #"{"home":1,"away":0,"last":"Goal"}"#)
        #expect(try merged(#"{"a":{"x":1,"y":2}}"#, #"{"a":{"z":3,"x":0}}"#) == #"{"a":{"x":0,"y":2,"z":3}}"#)
    }

    @Test func memberLookup() {
        let value: JSONValue = ["a": 1, "b": ["c": true]]
        #expect(value[member: "a"] == 1)
        #expect(value[member: "b"]?[member: "c"] == true)
        #expect(value[member: "z"] == nil)
        #expect(JSONValue.array([1])[member: "a"] == nil)
    }
}
