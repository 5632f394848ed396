#if canImport(Glibc)
import Glibc
#endif

/// The address a connection comes from, kept as the 16 bytes of an IPv6 address (an IPv4 address
/// as IPv4-mapped, `::ffff:192.0.2.1`, which is also how a dual-stack listener sees IPv4 clients).
///
/// ``client`` is what the server counts connections by: an IPv4 address whole, an IPv6 address by
/// its /64 network. One host or subscriber usually holds a whole /64, so counting single IPv6
/// addresses would let it open as many connections as it likes.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The first and last eight bytes of the address, in network order.
    let high: UInt64
    let low: UInt64

    /// `127.0.0.2`, `::1`, `2001:db8::7`: numeric only (no name lookup); nil for anything else.
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(ipv4NetworkOrder: v4.s_addr)
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        self.init(ipv6: v6)
    }

    /// The remote address of a connected socket; nil when it has none the server can count (not
    /// IP, or the socket is already gone).
    public init?(peerOf fd: Int32) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard result == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr } }
            self.init(ipv4NetworkOrder: address.s_addr)
        case AF_INET6:
            let address = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr } }
            self.init(ipv6: address)
        default:
            return nil
        }
    }

    private init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    private init(ipv4NetworkOrder address: in_addr_t) {
        self.init(high: 0, low: 0xffff_0000_0000 | UInt64(UInt32(bigEndian: address)))
    }

    private init(ipv6 address: in6_addr) {
        let bytes = withUnsafeBytes(of: address) { Array($0) }
        let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        self.init(high: high, low: low)
    }

    /// True for an IPv4 address (IPv4-mapped in IPv6).
    public var isIPv4: Bool { high == 0 && low >> 32 == 0xffff }

    /// The block counted as one client: the IPv4 address itself, or the IPv6 address's /64.
    public var client: PeerAddress { isIPv4 ? self : PeerAddress(high: high, low: 0) }

    /// `192.0.2.1`, or the IPv6 text form (`2001:db8::`).
    public var description: String {
        if isIPv4 {
            let value = UInt32(truncatingIfNeeded: low)
            return "\(value >> 24).\(value >> 16 & 0xff).\(value >> 8 & 0xff).\(value & 0xff)"
        }
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { bytes in
            for index in 0..<8 {
                bytes[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
                bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * index))
            }
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
