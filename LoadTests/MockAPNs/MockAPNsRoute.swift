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
        // Byte-wise prefix matching: this runs for every request.
        switch port {
        case .push:
            // A "/" in the token is left to the token check (BadDeviceToken), saving a scan here.
            if let token = Self.suffix(of: path, after: "/3/device/") {
                try Self.allow(["POST"], method, path)
                guard !token.isEmpty else { throw MockAPNsRejection(.missingDeviceToken, "no device token in \(path)") }
                self = .device(token: String(token))
                return
            }
            if let bundleID = Self.segment(of: path, after: "/4/broadcasts/apps/"), !bundleID.isEmpty {
                try Self.allow(["POST"], method, path)
                self = .broadcast(bundleID: String(bundleID))
                return
            }
        case .management:
            if let rest = Self.suffix(of: path, after: "/1/apps/"),
               let slash = rest.utf8.firstIndex(of: UInt8(ascii: "/")), slash != rest.startIndex {
                let bundleID = String(rest[..<slash])
                switch rest[rest.utf8.index(after: slash)...] {
                case "channels":
                    try Self.allow(["POST", "GET", "DELETE"], method, path)
                    switch method {
                    case "POST": self = .createChannel(bundleID: bundleID)
                    case "GET": self = .readChannel(bundleID: bundleID)
                    default: self = .deleteChannel(bundleID: bundleID)
                    }
                    return
                case "all-channels":
                    try Self.allow(["GET"], method, path)
                    self = .listChannels(bundleID: bundleID)
                    return
                default:
                    break
                }
            }
        }
        throw MockAPNsRejection(.badPath, "no such path on this port: \(path)")
    }

    /// The rest of `path` after `prefix`, if it starts so.
    private static func suffix(of path: String, after prefix: StaticString) -> Substring? {
        let prefixBytes = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        guard path.utf8.starts(with: prefixBytes) else { return nil }
        return path[path.utf8.index(path.utf8.startIndex, offsetBy: prefixBytes.count)...]
    }

    /// The rest of `path` after `prefix` when it is a single path segment (no further "/").
    private static func segment(of path: String, after prefix: StaticString) -> Substring? {
        guard let rest = suffix(of: path, after: prefix), !rest.utf8.contains(UInt8(ascii: "/")) else { return nil }
        return rest
    }

    private static func allow(_ methods: [String], _ method: String, _ path: String) throws(MockAPNsRejection) {
        guard methods.contains(method) else {
            throw MockAPNsRejection(.methodNotAllowed, "\(method) is not allowed on \(path)")
        }
    }
}
