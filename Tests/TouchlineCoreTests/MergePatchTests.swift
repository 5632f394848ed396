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

    /// Canonically equivalent names are different members (RFC 8259 compares code units).
    @Test func namesCompareByCodeUnits() throws {
        #expect(try merged(#"{"\u00e9": 1}"#, #"{"e\u0301": 2}"#) == "{\"\u{e9}\":1,\"e\u{301}\":2}")
        #expect(try merged(#"{"K": 1}"#, #"{"\u212a": null}"#) == #"{"K":1}"#)
        let value: JSONValue = ["\u{e9}": 1]
        #expect(value[member: "e\u{301}"] == nil)
    }

    /// Objects past the point where the merge switches to an index of names keep RFC 7396's
    /// rules member by member: a `null` removes, a value replaces, untouched members stay where
    /// they were, new ones follow in the patch's order.
    @Test func largeObjectsFollowTheRulesMemberByMember() {
        var random = SplitMix64(seed: 7)
        for _ in 0..<50 {
            let existing = (0..<Int(random.next() % 60)).map { JSONValue.Member("k\($0 * 3)", .integer(Int64($0))) }
            var changes: [JSONValue.Member] = []
            for index in 0..<Int(random.next() % 60) {
                let name = "k\(random.next() % 200)"
                let value: JSONValue = random.next() % 3 == 0 ? .null : .integer(-Int64(index) - 1)
                if !changes.contains(where: { $0.name == name }) { changes.append(JSONValue.Member(name, value)) }
            }
            guard case .object(let merged) = JSONValue.object(existing).applyingMergePatch(.object(changes)) else {
                Issue.record("the merge of two objects is not an object"); continue
            }
            let changed = Dictionary(uniqueKeysWithValues: changes.map { ($0.name, $0.value) })
            let kept = existing.filter { changed[$0.name] != .null }
            let added = changes.filter { change in change.value != .null && !existing.contains { $0.name == change.name } }
            #expect(merged.map(\.name) == kept.map(\.name) + added.map(\.name), "order or membership")
            for member in merged { #expect(member.value == changed[member.name] ?? existing.first { $0.name == member.name }?.value) }
        }
    }
}
