import ChildProcesses
import Foundation
import Testing
import TestSlots

/// Every stored fuzz input (the seeds and each finding kept as a regression, under
/// `Fuzz/Corpus/<target>/`) still passes its target: `touchline-fuzz` of the ordinary build
/// replays them through the same code the fuzzer drives.
@Suite struct FuzzCorpusTests {
    static let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("touchline-fuzz").path
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus").path

    static var targets: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: corpus)) ?? []).sorted()
    }

    @Test func everyTargetHasStoredInputs() {
        #expect(Set(Self.targets).isSuperset(of: ["json-parser", "merge-patch", "event-decoding", "sports-reducer", "configuration-file",
                                                  "http-request-head"]), "\(Self.targets)")
    }

    @Test(.heavy, arguments: targets)
    func storedInputsPass(target: String) async throws {
        let (termination, text) = try await ChildProcess.run(Self.executable, [target, Self.corpus + "/" + target])
        #expect(termination == .exited(0), "\(text)")
        #expect(text.contains("every invariant held") && !text.contains(": 0 inputs"), "\(text)")
    }
}
