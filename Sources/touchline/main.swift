import Foundation

/// The `touchline` command line. Each subcommand is one type with a `run(arguments:)`.
let arguments = Array(CommandLine.arguments.dropFirst())
let usage = """
    usage: touchline <command> [options]

    commands:
      serve     run the gateway: provider API, store, APNs (the bundled mock without credentials)
      demo      run the gateway on its embedded defaults (SQLite, bundled mock APNs) and feed it
                a short sample match, printing the broadcasts APNs receives
      health    ask a running gateway whether it is alive (GET /healthz): for container health checks
      apns-demo show the APNs client alone against the bundled mock: create a broadcast
                channel, publish to it, push to device tokens
      version   print the version
      help      print this text
    """

switch arguments.first {
case "serve":
    exit(await ServeCommand.run(arguments: Array(arguments.dropFirst())))
case "demo":
    exit(await MatchDemoCommand.run(arguments: Array(arguments.dropFirst())))
case "health":
    exit(HealthCommand.run(arguments: Array(arguments.dropFirst())))
case "apns-demo":
    exit(await APNsDemoCommand.run(arguments: Array(arguments.dropFirst())))
case "version", "--version":
    print("touchline \(touchlineVersion)")
case "help", "--help", "-h", nil:
    print(usage)
case let other?:
    FileHandle.standardError.write(Data("touchline: unknown command '\(other)' (try 'touchline help')\n".utf8))
    exit(64)
}
