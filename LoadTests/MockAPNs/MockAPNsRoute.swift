/// Where a request goes, from its port, method and path.
///
/// Each port serves only its own paths: channel management on the push port (or pushes on the
/// management port) is a 404 `BadPath`, like a request to the wrong APNs host.
enum MockAPNsRoute {
    case device(token: String)
    case broadcast(bundleID: String)
    case createChannel(bundleID: String)
    case readChannel(bundleID: String)
    case deleteChannel(bundleID: String)
    case listChannels(bundleID: String)

    var endpoint: MockAPNsEndpoint {
        switch self {
        case .device: .device
        case .broadcast: .broadcast
        case .createChannel: .createChannel
        case .readChannel: .readChannel
        case .deleteChannel: .deleteChannel
        case .listChannels: .listChannels
        }
    }

    init(port: MockAPNsPort, method: String, path: String) throws(MockAPNsRejection) {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        // A valid path starts with "/", so the first segment is empty.
        guard segments.count >= 2, segments[0].isEmpty else { throw Self.badPath(path) }
        switch (port, segments[1], segments.count) {
        case (.push, "3", 4) where segments[2] == "device":
            try Self.allow(["POST"], method, path)
            guard !segments[3].isEmpty else { throw MockAPNsRejection(.missingDeviceToken, "no device token in \(path)") }
            self = .device(token: String(segments[3]))
        case (.push, "4", 5) where segments[2] == "broadcasts" && segments[3] == "apps" && !segments[4].isEmpty:
            try Self.allow(["POST"], method, path)
            self = .broadcast(bundleID: String(segments[4]))
        case (.management, "1", 5) where segments[2] == "apps" && !segments[3].isEmpty && segments[4] == "channels":
            try Self.allow(["POST", "GET", "DELETE"], method, path)
            let bundleID = String(segments[3])
            switch method {
            case "POST": self = .createChannel(bundleID: bundleID)
            case "GET": self = .readChannel(bundleID: bundleID)
            default: self = .deleteChannel(bundleID: bundleID)
            }
        case (.management, "1", 5) where segments[2] == "apps" && !segments[3].isEmpty && segments[4] == "all-channels":
            try Self.allow(["GET"], method, path)
            self = .listChannels(bundleID: String(segments[3]))
        default:
            throw Self.badPath(path)
        }
    }

    private static func allow(_ methods: Set<String>, _ method: String, _ path: String) throws(MockAPNsRejection) {
        guard methods.contains(method) else {
            throw MockAPNsRejection(.methodNotAllowed, "\(method) is not allowed on \(path)")
        }
    }

    private static func badPath(_ path: String) -> MockAPNsRejection {
        MockAPNsRejection(.badPath, "no such path on this port: \(path)")
    }
}
