import CommandLineOptions
import Foundation
import Touchline
import TouchlineChannels

/// `touchline replay FEED.jsonl`: runs a recorded feed through the real engine in virtual time
/// with a policy to try and prints the pushes it would make (``Replay``); nothing is sent.
enum ReplayCommand {
    static let policy = OptionDeclaration.value("--policy", "JSON|FILE",
                                                help: "policy members to try instead of the recorded ones: a JSON object, or a file holding one")
    static let apnsLatency = OptionDeclaration.value("--apns-latency", "MS", help: "how long the simulated APNs takes to accept a push (default 20)")
    static let tail = OptionDeclaration.value("--tail", "SECONDS",
                                              help: "how long the engine runs after the last input, for pushes still held (default 3600)")
    static let svg = OptionDeclaration.value("--svg", "FILE", help: "also write a chart of pushes and delays per minute (SVG) to FILE")

    static let declaration = CommandDeclaration(
        name: "replay", summary: "run a recorded feed through the engine with a policy to try, and print the pushes it would make",
        description: """
            FEED is JSON Lines as GET /v1/channels/{id}/events/export writes it (docs/replay.md):
            a header naming the channel, then each event with the time it was received. Every
            event goes through the channel's reducer and engine at its time, exactly as the
            gateway applies it; APNs is simulated. Prints pushes by priority, coalescing,
            ingest to APNs delays, the priority-10 budget's use and the end. Exit status 65
            names the first line the channel would refuse.
            """,
        groups: [OptionGroup(nil, [policy, apnsLatency, tail, svg])],
        positional: PositionalArguments("FEED"))

    static func run(_ commandLine: ParsedArguments) -> Int32 {
        guard commandLine.positionals.count == 1, let path = commandLine.positionals.first else {
            printError("touchline replay: give one recorded feed (touchline replay FEED.jsonl)")
            return 64
        }
        var options = Replay.Options()
        do {
            if let milliseconds = try commandLine.number(apnsLatency, in: 0...60_000) { options.apnsLatency = .milliseconds(milliseconds) }
            if let seconds = try commandLine.number(tail, in: 0...86_400) { options.tail = .seconds(seconds) }
        } catch {
            printError(error.line())
            return 64
        }
        if let given = commandLine.value(policy) {
            if given.hasPrefix("{") {
                options.policyChanges = Array(given.utf8)
            } else {
                guard let bytes = FileManager.default.contents(atPath: given) else {
                    printError("touchline replay: cannot read the policy file \(given)")
                    return 66
                }
                options.policyChanges = Array(bytes)
            }
        }
        guard let feed = FileManager.default.contents(atPath: path) else {
            printError("touchline replay: cannot read \(path)")
            return 66
        }
        let output: Replay.Output
        do {
            output = try Replay.run(feed: Array(feed), options: options)
        } catch {
            printError("touchline replay: \(path): \(error)")
            return 65
        }
        print(output.summary)
        if let chartPath = commandLine.value(svg) {
            guard FileManager.default.createFile(atPath: chartPath, contents: Data(output.chart.utf8)) else {
                printError("touchline replay: cannot write \(chartPath)")
                return 73
            }
            print("  chart        \(chartPath)")
        }
        return 0
    }
}
