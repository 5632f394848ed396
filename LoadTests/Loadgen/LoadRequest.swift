import CommandLineOptions
import Foundation
import LoadKit

/// What one `touchline-load` run was asked for: the scenario, and every option read into the
/// shared settings and that scenario's options. A bad value is a ``UsageError`` naming the option.
struct LoadRequest {
    var scenario: String
    var settings = LoadSettings()
    var matchday = Matchday.Options()
    var storm = KickoffStorm.Options()
    var burst = IngestBurst.Options()
    var ceiling = ClientCeiling.Options()
    var soak = Soak.Options()
    var hooks = WebhookIsolation.Options()
    var exports = ExportMemory.Options()
    var scaleOut = ScaleOut.Options()
    var registry = TokenRegistryScale.Options()
    var registryPartitions = RegistryPartitionsScale.Options()
    var registryScaleOut = RegistryScaleOut.Options()

    init(_ parsed: ParsedArguments) throws(UsageError) {
        typealias Line = LoadCommandLine
        scenario = parsed.subcommand ?? "standard"
        func positive(_ option: OptionDeclaration) throws(UsageError) -> Int? { try parsed.integer(option, in: 1...Int.max) }
        func whole(_ option: OptionDeclaration) throws(UsageError) -> Int? { try parsed.integer(option, in: 0...Int.max) }

        settings.check = parsed.isSet(Line.Shared.check)
        settings.resultsRoot = parsed.value(Line.Shared.results) ?? settings.resultsRoot
        if parsed.isSet(Line.Shared.noPinning) { settings.placement = .shared(cpus: ProcessInfo.processInfo.activeProcessorCount) }
        settings.gatewayConfig = parsed.value(Line.Shared.gatewayConfig)
        settings.gatewayBinary = parsed.value(Line.Shared.gatewayBinary)
        if let file = settings.gatewayConfig, !FileManager.default.isReadableFile(atPath: file) {
            throw parsed.invalid(Line.Shared.gatewayConfig, "cannot read \(file)")
        }

        switch scenario {
        case "matchday":
            matchday.schedule.matches = try positive(Line.Matchday.matches) ?? matchday.schedule.matches
            matchday.schedule.matchSeconds = try positive(Line.Matchday.matchSeconds).map(Double.init) ?? matchday.schedule.matchSeconds
            matchday.schedule.halfTimeSeconds = try positive(Line.Matchday.halfTimeSeconds).map(Double.init) ?? matchday.schedule.halfTimeSeconds
            matchday.schedule.kickoffSpreadSeconds = try positive(Line.Matchday.kickoffSpread).map(Double.init)
                ?? matchday.schedule.kickoffSpreadSeconds
            matchday.schedule.seed = try positive(Line.Matchday.seed).map(UInt64.init) ?? matchday.schedule.seed
        case "kickoff-storm":
            storm.tokens = try positive(Line.Storm.tokens) ?? storm.tokens
            storm.rounds = try positive(Line.Storm.rounds) ?? storm.rounds
            storm.matches = try positive(Line.Storm.matches) ?? storm.matches
            storm.mockThreads = try positive(Line.Storm.mockThreads) ?? storm.mockThreads
            storm.personalConnections = try positive(Line.Storm.personalConnections) ?? storm.personalConnections
            storm.personalInFlight = try positive(Line.Storm.personalInFlight) ?? storm.personalInFlight
        case "ingest-burst":
            burst.channels = try positive(Line.Burst.channels) ?? burst.channels
            burst.connections = try positive(Line.Burst.connections) ?? burst.connections
            burst.batchSize = try positive(Line.Burst.batch) ?? burst.batchSize
            if let seconds = try positive(Line.Burst.seconds) {
                burst.burstSeconds = Double(seconds)
                burst.latencySeconds = burst.burstSeconds
            }
        case "client-ceiling":
            ceiling.requests = try positive(Line.Ceiling.requests) ?? ceiling.requests
            ceiling.concurrency = try positive(Line.Ceiling.concurrency) ?? ceiling.concurrency
            ceiling.rounds = try positive(Line.Ceiling.rounds) ?? ceiling.rounds
            ceiling.mockThreads = try positive(Line.Ceiling.mockThreads) ?? ceiling.mockThreads
        case "webhook-isolation":
            hooks.rounds = try positive(Line.Hooks.rounds) ?? hooks.rounds
            hooks.matches = try positive(Line.Hooks.matches) ?? hooks.matches
            hooks.seconds = try positive(Line.Hooks.seconds).map(Double.init) ?? hooks.seconds
        case "export-memory":
            exports.events = try parsed.integer(Line.Exports.events, in: 1...100_000) ?? exports.events
            exports.concurrent = try parsed.integer(Line.Exports.concurrent, in: 1...64) ?? exports.concurrent
        case "scale-out":
            scaleOut.channels = try positive(Line.ScaleOutOptions.channels) ?? scaleOut.channels
            scaleOut.partitions = try parsed.integer(Line.ScaleOutOptions.partitions, in: 1...4096) ?? scaleOut.partitions
            scaleOut.kills = try whole(Line.ScaleOutOptions.kills) ?? scaleOut.kills
            scaleOut.pauses = try whole(Line.ScaleOutOptions.pauses) ?? scaleOut.pauses
            scaleOut.leaseTTLMilliseconds = try parsed.integer(Line.ScaleOutOptions.leaseTTL, in: 300...60_000) ?? scaleOut.leaseTTLMilliseconds
            if let seconds = try positive(Line.ScaleOutOptions.seconds) {
                scaleOut.burstSeconds = Double(seconds)
                scaleOut.latencySeconds = scaleOut.burstSeconds
            }
            // The registry's and the kickoff's parts of the run (main.swift), otherwise with their defaults.
            registryScaleOut.tokens = try positive(Line.ScaleOutOptions.registryTokens) ?? registryScaleOut.tokens
            storm.tokens = try positive(Line.ScaleOutOptions.kickoffTokens) ?? storm.tokens
            storm.rounds = try positive(Line.ScaleOutOptions.kickoffRounds) ?? 1
        case "token-registry":
            registry.tokens = try positive(Line.RegistryOptions.tokens) ?? registry.tokens
            registry.sampleTokens = try positive(Line.RegistryOptions.sample) ?? registry.sampleTokens
        case "registry-partitions":
            registryPartitions.tokens = try positive(Line.RegistryOptions.tokens) ?? registryPartitions.tokens
            registryPartitions.sampleTokens = try positive(Line.RegistryOptions.sample) ?? registryPartitions.sampleTokens
            registryPartitions.partitions = try parsed.integer(Line.RegistryOptions.partitions, in: 2...1_024) ?? registryPartitions.partitions
        case "registry-scale-out":
            registryScaleOut.tokens = try positive(Line.RegistryOptions.tokens) ?? registryScaleOut.tokens
            registryScaleOut.partitions = try parsed.integer(Line.RegistryOptions.partitions, in: 2...1_024) ?? registryScaleOut.partitions
            registryScaleOut.measuresReferences = !parsed.isSet(Line.RegistryOptions.skipReferences)
        case "soak":
            try readSoak(parsed, positive: positive, whole: whole)
        default:
            break
        }
    }

    private mutating func readSoak(_ parsed: ParsedArguments, positive: (OptionDeclaration) throws(UsageError) -> Int?,
                                   whole: (OptionDeclaration) throws(UsageError) -> Int?) throws(UsageError) {
        typealias Options = LoadCommandLine.SoakOptions
        soak.seconds = try positive(Options.seconds).map(Double.init) ?? soak.seconds
        soak.kills = try whole(Options.kills) ?? soak.kills
        soak.diskSeconds = try whole(Options.diskSeconds).map(Double.init) ?? soak.diskSeconds
        if let text = parsed.value(Options.diskFault) {
            guard let choice = DiskFault.Choice(rawValue: text) else { throw parsed.invalid(Options.diskFault, "takes auto, tmpfs or fault-file, got \(text)") }
            soak.diskFault = choice
        }
        soak.seed = try positive(Options.seed).map(UInt64.init) ?? soak.seed
        soak.channels = try positive(Options.channels) ?? soak.channels
        soak.tokens = try positive(Options.tokens) ?? soak.tokens
        soak.slowClientsPerKind = try whole(Options.slowClients) ?? soak.slowClientsPerKind
        if let text = parsed.value(Options.deadlines) {
            let seconds = text.split(separator: ",").compactMap { Double($0) }
            guard seconds.count == 3, seconds.allSatisfy({ $0 > 0 }) else {
                throw parsed.invalid(Options.deadlines, "takes three positive numbers of seconds: HEAD,BODY,IDLE")
            }
            soak.deadlines = SlowClients.Deadlines(head: seconds[0], body: seconds[1], idle: seconds[2])
        }
    }
}
