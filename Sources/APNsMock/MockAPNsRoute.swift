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

    /// Routes by comparing bytes: this runs for every request, and only the token or bundle id
    /// becomes a string.
    init(port: MockAPNsPort, method: String, path: UnsafeRawBufferPointer) throws(MockAPNsRejection) {
        switch port {
        case .push:
            // A "/" in the token is left to the token check (BadDeviceToken), saving a scan here.
            if let token = Self.suffix(of: path, after: "/3/device/") {
                try Self.allow(["POST"], method, path)
                guard !token.isEmpty else { throw MockAPNsRejection(.missingDeviceToken, "no device token in \(Self.text(path))") }
                self = .device(token: Self.text(token))
                return
            }
            if let bundleID = Self.suffix(of: path, after: "/4/broadcasts/apps/"), !bundleID.isEmpty,
               !bundleID.contains(UInt8(ascii: "/")) {
                try Self.allow(["POST"], method, path)
                self = .broadcast(bundleID: Self.text(bundleID))
                return
            }
        case .management:
            if let rest = Self.suffix(of: path, after: "/1/apps/"),
               let slash = rest.firstIndex(of: UInt8(ascii: "/")), slash != rest.startIndex {
                let bundleID = Self.text(rest[..<slash])
                switch Self.text(rest[(slash + 1)...]) {
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
        throw MockAPNsRejection(.badPath, "no such path on this port: \(Self.text(path))")
    }

    /// The rest of `path` after `prefix`, if it starts so.
    private static func suffix(of path: UnsafeRawBufferPointer, after prefix: StaticString) -> Slice<UnsafeRawBufferPointer>? {
        let n = prefix.utf8CodeUnitCount
        guard path.count >= n, memcmp(path.baseAddress!, prefix.utf8Start, n) == 0 else { return nil }
        return path[n...]
    }

    private static func text(_ bytes: UnsafeRawBufferPointer) -> String { String(decoding: bytes, as: UTF8.self) }

    private static func text(_ bytes: Slice<UnsafeRawBufferPointer>) -> String { String(decoding: bytes, as: UTF8.self) }

    private static func allow(_ methods: [String], _ method: String, _ path: UnsafeRawBufferPointer) throws(MockAPNsRejection) {
        guard methods.contains(method) else {
            throw MockAPNsRejection(.methodNotAllowed, "\(method) is not allowed on \(text(path))")
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
