import CommandLineOptions
import Foundation
import Touchline
import TouchlineCluster

/// `touchline migrate --from DIR`: copies a SQLite gateway's channels, tokens and open jobs into
/// the cluster its settings name (``ClusterMigration``), and prints what it copied.
enum MigrateCommand {
    static let from = OptionDeclaration.value("--from", "DIR", help: "the data directory of the gateway on SQLite to copy from")
    static let sharedRegistry = OptionDeclaration.flag(
        "--shared-registry",
        help: "move the cluster's shared token registry into its partitions (store.registry \"partitioned\"), every gateway stopped")

    static let declaration = CommandDeclaration(
        name: "migrate",
        summary: "copy a gateway on SQLite into a NATS JetStream cluster, or move a cluster's shared token registry into its partitions",
        description: """
            Settings are serve's: the cluster comes from store (store.backend "jetstream").

            --from DIR copies a gateway on SQLite (channels, events, tokens, open jobs); the open
            jobs go to the data directory given (the gateway started on it runs them). Run it
            before the cluster's gateways serve the channels, never beside a gateway on the same
            data directory. Channels already in the cluster are left as they are: running it again
            copies nothing twice. Dead letters and idempotency keys are not copied.

            --shared-registry moves a cluster's token registry from the shared layout to the
            partitioned one (store.registry "partitioned"), keeping every token as it is. Stop
            every gateway of the cluster and let open jobs finish first; it refuses otherwise,
            changing nothing. Then start the gateways with store.registry "partitioned".
            """,
        groups: [OptionGroup("source", [from, sharedRegistry]), OptionGroup("settings", GatewayConfiguration.commandLineOptions)])

    static func run(_ commandLine: ParsedArguments) -> Int32 {
        let source = commandLine.value(from)
        let movesSharedRegistry = commandLine.isSet(sharedRegistry)
        guard (source != nil) != movesSharedRegistry else {
            printError(movesSharedRegistry
                ? "touchline migrate: --from and --shared-registry are two migrations: give one"
                : "touchline migrate: --from is required: the data directory of the gateway on SQLite to copy from (or --shared-registry)")
            return 64
        }
        let configuration: GatewayConfiguration
        do {
            configuration = try GatewayConfiguration.resolve(commandLine: commandLine, environment: ProcessInfo.processInfo.environment).configuration
        } catch {
            printError("touchline migrate: invalid configuration:\n\(error)")
            return 64
        }
        guard let cluster = configuration.store.jetStream else {
            printError("touchline migrate: store.backend is \"sqlite\": give the cluster's store settings (store.backend \"jetstream\") to copy into")
            return 64
        }
        do {
            let summary: any CustomStringConvertible = if let source {
                try ClusterMigration(source: source, settings: cluster, dataDirectory: configuration.dataDirectory).run()
            } else {
                try RegistryLayoutMigration(settings: cluster, dataDirectory: configuration.dataDirectory).run()
            }
            print("touchline migrate: \(summary)")
            return 0
        } catch {
            printError("touchline migrate: \(error)")
            return 1
        }
    }
}
