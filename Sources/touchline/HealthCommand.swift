import CommandLineOptions
import Foundation

/// `touchline health [URL]`: asks a running gateway whether it is alive, for container health
/// checks without shipping an HTTP client. Exit status 0 for a 2xx answer, 1 otherwise (the
/// reason on standard error).
enum HealthCommand {
    static let defaultURL = "http://127.0.0.1:8080/healthz"

    static let declaration = CommandDeclaration(
        name: "health", summary: "ask a running gateway whether it is alive (GET /healthz): for container health checks",
        description: "GETs URL (default \(defaultURL)) and exits 0 if the answer is 2xx, 1 otherwise.\nGives up after 5 seconds.",
        positional: PositionalArguments("URL"))

    static func run(url given: String?) -> Int32 {
        let url = given ?? defaultURL
        do {
            let (client, path) = try PlainHTTPClient.parse(url)
            let response = try client.request("GET", path)
            guard (200..<300).contains(response.status) else {
                printError("touchline health: \(url) answered \(response.status): \(response.text.prefix(200))")
                return 1
            }
            return 0
        } catch {
            printError("touchline health: \(error)")
            return 1
        }
    }
}
