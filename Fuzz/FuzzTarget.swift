/// One fuzz target: a name and a function that takes any bytes and must neither trap nor break
/// an invariant (a broken invariant is a `fatalError` naming it, which the fuzzer reports).
struct FuzzTarget: Sendable {
    let name: String
    let run: @Sendable ([UInt8]) -> Void

    static let all: [FuzzTarget] = [
        FuzzTarget(name: "json-parser", run: JSONParserTarget.run),
        FuzzTarget(name: "merge-patch", run: MergePatchTarget.run),
        FuzzTarget(name: "event-decoding", run: EventDecodingTarget.run),
        FuzzTarget(name: "sports-reducer", run: SportsReducerTarget.run),
        FuzzTarget(name: "configuration-file", run: ConfigurationFileTarget.run),
        FuzzTarget(name: "http-request-head", run: HTTPRequestHeadTarget.run),
    ]
}

/// Stops the run when an invariant does not hold, naming it (libFuzzer saves the input).
func require(_ condition: @autoclosure () -> Bool, _ invariant: @autoclosure () -> String) {
    if !condition() { fatalError("invariant broken: \(invariant())") }
}

/// Splits an input in two at its first NUL byte (the second part empty when there is none):
/// targets that take two documents, such as a state and a patch.
func halves(_ bytes: [UInt8]) -> ([UInt8], [UInt8]) {
    guard let split = bytes.firstIndex(of: 0) else { return (bytes, []) }
    return (Array(bytes[..<split]), Array(bytes[(split + 1)...]))
}
