import CommandLineOptions
import Foundation

/// The `touchline` command line: one declaration (``TouchlineCommands/root``) gives the parser,
/// the help of every command and its one-line errors; each subcommand is one type with a `run`.
let parsed: ParsedArguments
do {
    parsed = try CommandLineParser.parse(Array(CommandLine.arguments.dropFirst()), command: TouchlineCommands.root)
} catch {
    printError(error.line())
    exit(UsageError.exitStatus)
}
if parsed.helpRequested {
    print(HelpText.render(TouchlineCommands.root, path: parsed.subcommandPath))
    exit(0)
}

switch parsed.subcommand {
case "serve":
    exit(await ServeCommand.run(parsed))
case "demo":
    exit(await MatchDemoCommand.run())
case "migrate":
    exit(MigrateCommand.run(parsed))
case "replay":
    exit(ReplayCommand.run(parsed))
case "health":
    exit(HealthCommand.run(url: parsed.positionals.first))
case "apns-demo":
    exit(await APNsDemoCommand.run())
case "version":
    print("touchline \(touchlineVersion)")
case "help":
    let topic = parsed.positionals.first
    guard topic.map({ TouchlineCommands.root.subcommand($0) != nil }) ?? true else {
        let names = TouchlineCommands.root.subcommands.map(\.name)
        printError(UsageError(.unknownCommand(topic!, noun: "command", suggestion: NameSuggestion.closest(to: topic!, among: names)),
                              command: "touchline help").line())
        exit(UsageError.exitStatus)
    }
    print(HelpText.render(TouchlineCommands.root, path: topic.map { [$0] } ?? []))
default:
    if parsed.isSet(TouchlineCommands.version) {
        print("touchline \(touchlineVersion)")
    } else {
        print(HelpText.render(TouchlineCommands.root))
    }
}
