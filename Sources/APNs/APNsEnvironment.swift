/// Which APNs installation a client talks to.
///
/// Channels, device tokens and (for newer keys) signing keys are all environment-specific, so
/// the environment is part of every client's identity: one pool per environment.
public enum APNsEnvironment: Sendable, Equatable, CustomStringConvertible {
    /// `api.push.apple.com:443` for pushes, `api-manage-broadcast.push.apple.com:2196` for channels.
    case production
    /// `api.sandbox.push.apple.com:443` for pushes, `api-manage-broadcast.sandbox.push.apple.com:2195` for channels.
    case sandbox
    /// Any other server, such as the mock APNs server used in tests and load runs.
    case custom(pushHost: String, pushPort: Int, managementHost: String, managementPort: Int)

    /// Where per-token pushes (`/3/device/...`) and broadcast publishes (`/4/broadcasts/...`) go.
    public var pushEndpoint: APNsEndpoint {
        switch self {
        case .production: APNsEndpoint(host: "api.push.apple.com", port: 443)
        case .sandbox: APNsEndpoint(host: "api.sandbox.push.apple.com", port: 443)
        case .custom(let host, let port, _, _): APNsEndpoint(host: host, port: port)
        }
    }

    /// Where channel management (`/1/apps/.../channels`) goes: a separate host, port and pool.
    public var managementEndpoint: APNsEndpoint {
        switch self {
        case .production: APNsEndpoint(host: "api-manage-broadcast.push.apple.com", port: 2196)
        case .sandbox: APNsEndpoint(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)
        case .custom(_, _, let host, let port): APNsEndpoint(host: host, port: port)
        }
    }

    /// The endpoint that serves requests of `kind`.
    public func endpoint(for kind: APNsEndpointKind) -> APNsEndpoint {
        kind == .channelManagement ? managementEndpoint : pushEndpoint
    }

    public var description: String {
        switch self {
        case .production: "production"
        case .sandbox: "sandbox"
        case .custom(let pushHost, let pushPort, let managementHost, let managementPort):
            "custom (push \(pushHost):\(pushPort), management \(managementHost):\(managementPort))"
        }
    }
}

/// A host and port that serves APNs requests.
public struct APNsEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// The HTTP/2 `:authority`: the host alone on 443, otherwise `host:port` (IPv6 in brackets).
    public var authority: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return port == 443 ? bracketed : "\(bracketed):\(port)"
    }

    public var description: String { authority }
}

/// The three APNs APIs; they differ in host, headers, payload limits and error handling.
public enum APNsEndpointKind: Sendable, Hashable, CustomStringConvertible {
    /// `POST /3/device/{token}`: one push to one device token.
    case device
    /// `POST /4/broadcasts/apps/{bundleId}`: one update to every subscriber of a channel.
    case broadcast
    /// `/1/apps/{bundleId}/channels` and `/all-channels` on the management host.
    case channelManagement

    public var description: String {
        switch self {
        case .device: "device push"
        case .broadcast: "broadcast"
        case .channelManagement: "channel management"
        }
    }
}
