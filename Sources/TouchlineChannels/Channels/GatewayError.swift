/// Why the gateway cannot start.
public enum GatewayError: Error, Sendable, CustomStringConvertible {
    case dataDirectory(path: String, cause: String)
    case startup(String)

    public var description: String {
        switch self {
        case .dataDirectory(let path, let cause): "cannot use the data directory \(path): \(cause)"
        case .startup(let cause): cause
        }
    }
}
