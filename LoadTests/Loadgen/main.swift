import CommandLineOptions
import Foundation
import LoadKit

/// `touchline-load`: match-day load scenarios for Touchline, run in a release build. The
/// scenarios and their options are declared in ``LoadCommandLine``; a command line it cannot
/// run exits 64 with one line.
func fail(_ error: UsageError) -> Never {
    FileHandle.standardError.write(Data("\(error.line())\n".utf8))
    exit(UsageError.exitStatus)
}

let request: LoadRequest
do {
    let parsed = try CommandLineParser.parse(Array(CommandLine.arguments.dropFirst()), command: LoadCommandLine.root)
    guard !parsed.helpRequested, parsed.subcommand != nil else {
        print(HelpText.render(LoadCommandLine.root, path: parsed.subcommandPath))
        exit(parsed.helpRequested ? 0 : UsageError.exitStatus)
    }
    request = try LoadRequest(parsed)
} catch {
    fail(error)
}
let (scenario, settings) = (request.scenario, request.settings)
let (matchday, storm, burst, ceiling, soak, hooks) = (request.matchday, request.storm, request.burst, request.ceiling, request.soak,
                                                      request.hooks)

let run = LoadRun(settings: settings)
switch scenario {
case "matchday": await run.finish([{ try Matchday(options: matchday, settings: settings).run() }])
case "kickoff-storm": await run.finish([{ try KickoffStorm(options: storm, settings: settings).run() }])
case "ingest-burst": await run.finish([{ try IngestBurst(options: burst, settings: settings).run() }])
case "client-ceiling": await run.finish([{ try await ClientCeiling(options: ceiling, settings: settings).run() }])
case "merge-patch": await run.finish([{ try MergePatchCost(options: MergePatchCost.Options()).run() }])
case "soak": await run.finish([{ try Soak(options: soak, settings: settings).run() }])
case "scale-out":
    // Every figure of the cluster's cost in one run (issue 34): the cluster's own, then the
    // partitioned registry's, then the kickoff fan-out's, each a scenario of the report.
    await run.finish([
        { try await ScaleOut(options: request.scaleOut, settings: settings).run() },
        { try await RegistryScaleOut(options: request.registryScaleOut, settings: settings).run() },
        { try KickoffStorm(options: storm, settings: settings).run() },
    ])
case "token-registry": await run.finish([{ try await TokenRegistryScale(options: request.registry).run() }])
case "registry-partitions": await run.finish([{ try await RegistryPartitionsScale(options: request.registryPartitions).run() }])
case "registry-scale-out": await run.finish([{ try await RegistryScaleOut(options: request.registryScaleOut, settings: settings).run() }])
case "webhook-isolation": await run.finish([{ try WebhookIsolation(options: hooks, settings: settings).run() }])
case "export-memory": await run.finish([{ try ExportMemory(options: request.exports, settings: settings).run() }])
default:
    // The standard set: every scenario with its defaults, client-ceiling with 3 rounds.
    var standardCeiling = ClientCeiling.Options()
    standardCeiling.rounds = 3
    await run.finish([
        { try await ClientCeiling(options: standardCeiling, settings: settings).run() },
        { try IngestBurst(options: IngestBurst.Options(), settings: settings).run() },
        { try Matchday(options: Matchday.Options(), settings: settings).run() },
        { try KickoffStorm(options: KickoffStorm.Options(), settings: settings).run() },
        { try MergePatchCost(options: MergePatchCost.Options()).run() },
    ])
}
