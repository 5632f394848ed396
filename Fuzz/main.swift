import Foundation

/// `touchline-fuzz <target> [arguments]`: the fuzz targets of docs/reliability.md.
///
/// Built with `make fuzz` (`-sanitize=fuzzer` and `-D FUZZING`), the binary is a libFuzzer
/// fuzzer: the arguments after the target are libFuzzer's (`-max_total_time=60 corpus/`).
/// In the ordinary build it replays inputs instead: each argument is a file or a folder of
/// files run through the same target, so the test suite keeps every stored input (seeds and
/// past findings under `Fuzz/Corpus/<target>/`) passing without the fuzzer's runtime.
let usage = """
    usage: touchline-fuzz <target> [libFuzzer options and corpus folders | files to replay]
    targets: \(FuzzTarget.all.map(\.name).joined(separator: ", "))
    """

let arguments = CommandLine.arguments.dropFirst()
guard let name = arguments.first, let target = FuzzTarget.all.first(where: { $0.name == name }) else {
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(64)
}

#if FUZZING
exit(FuzzDriver.run(target, arguments: Array(arguments)))
#else
exit(FuzzReplay.run(target, paths: Array(arguments.dropFirst())))
#endif
