import Foundation

/// `touchline health [URL]`: asks a running gateway whether it is alive, for container health
/// checks without shipping an HTTP client. Exit status 0 for a 2xx answer, 1 otherwise (the
/// reason on standard error).
enum HealthCommand {
    static let defaultURL = "http://127.0.0.1:8080/healthz"

    static let usage = """
        usage: touchline health [URL]

        GETs URL (default \(defaultURL)) and exits 0 if the answer is 2xx, 1 otherwise.
        Gives up after 5 seconds.
        """

    static func run(arguments: [String]) -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return 0
        }
        guard arguments.count <= 1 else {
            printError("touchline health takes at most one URL (got \(arguments.joined(separator: " ")))")
            return 64
        }
        let url = arguments.first ?? defaultURL
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
