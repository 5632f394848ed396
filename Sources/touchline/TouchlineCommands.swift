import CommandLineOptions
import Foundation

/// The declaration of the `touchline` command line: every subcommand, with its options, from the
/// types that run them.
enum TouchlineCommands {
    static let version = OptionDeclaration.flag("--version", help: "print the version")

    static let root = CommandDeclaration(
        name: "touchline", summary: "a push gateway for live sports",
        groups: [OptionGroup(nil, [version])],
        subcommands: [
            ServeCommand.declaration,
            CommandDeclaration(name: "demo", summary: "run the gateway on its embedded defaults (SQLite, bundled mock APNs) and feed it "
                                   + "a short sample match, printing the broadcasts APNs receives"),
            HealthCommand.declaration,
            MigrateCommand.declaration,
            ReplayCommand.declaration,
            CommandDeclaration(name: "apns-demo", summary: "show the APNs client alone against the bundled mock: create a broadcast "
                                   + "channel, publish to it, push to device tokens"),
            CommandDeclaration(name: "version", summary: "print the version"),
            CommandDeclaration(name: "help", summary: "print this text, or a command's (touchline help serve)",
                               positional: PositionalArguments("COMMAND")),
        ])
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
