import APNsMock
import CommandLineOptions
import Foundation

/// `touchline-mock-apns`: runs the strict mock APNs server until SIGINT or SIGTERM. Its options
/// are declared in `MockAPNsCommandLine`; a command line it cannot run exits 64 with one line.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("touchline-mock-apns: \(message)\n".utf8))
    exit(1)
}

let commandLine: MockAPNsCommandLine
do {
    commandLine = try MockAPNsCommandLine.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("touchline-mock-apns: \(error)\n".utf8))
    exit(UsageError.exitStatus)
}
if commandLine.showHelp {
    print(MockAPNsCommandLine.usage)
    exit(0)
}

var configuration = commandLine.configuration
var caFile: String?
if configuration.certificateFile == nil {
    do {
        let directory = try commandLine.certificateDirectory ?? MockAPNsDevelopmentCertificates.temporaryDirectory()
        let files = try MockAPNsDevelopmentCertificates.generate(in: directory)
        configuration.certificateFile = files.certificateFile
        configuration.privateKeyFile = files.privateKeyFile
        caFile = files.caFile
    } catch {
        fail("\(error)")
    }
}

// Block the signals before any loop thread exists, so that only sigwait below sees them:
// SIGINT and SIGTERM stop, SIGUSR1 prints the arrival report.
var handledSignals = sigset_t()
sigemptyset(&handledSignals)
sigaddset(&handledSignals, SIGINT)
sigaddset(&handledSignals, SIGTERM)
sigaddset(&handledSignals, SIGUSR1)
pthread_sigmask(SIG_BLOCK, &handledSignals, nil)

let server: MockAPNsServer
let addresses: MockAPNsServer.Addresses
do {
    server = try MockAPNsServer(configuration: configuration)
    addresses = try server.start()
} catch {
    fail("\(error)")
}
print("push port \(addresses.pushPort) (device pushes, broadcasts) on \(addresses.host)")
print("management port \(addresses.managementPort) (broadcast channels) on \(addresses.host)")
print("CA file \(caFile ?? "none (certificate given with --cert)")")
print("threads \(configuration.threads), bundle \(configuration.bundleID), team \(configuration.teamID), keys \(configuration.keys.map(\.keyID).joined(separator: ","))")
fflush(nil)

var received: Int32 = 0
while sigwait(&handledSignals, &received) == 0, received == SIGUSR1 {
    print(server.takeArrivalReport().printed)
    fflush(nil)
}
server.stop()
if commandLine.printCounters {
    print(server.counters())
}
