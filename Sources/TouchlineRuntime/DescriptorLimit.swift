#if canImport(Glibc)
import Glibc
#endif

/// The process's open-file limit (`RLIMIT_NOFILE`).
///
/// Every connection costs a descriptor, and many systems start processes with a soft limit of
/// 1,024 while allowing far more: at the soft limit `accept()` fails although the hard limit
/// would allow thousands more. The gateway raises the soft limit to the hard limit at start
/// (no privilege needed), and logs what it did.
public enum DescriptorLimit {
    /// The soft limit before and after, and the hard limit.
    public struct Change: Sendable, Equatable {
        public var previous: UInt64
        public var current: UInt64
        public var hard: UInt64
    }

    /// The soft and hard limits now; nil if the system does not say.
    public static func current() -> (soft: UInt64, hard: UInt64)? {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return nil }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one (when the hard limit is unlimited, to the kernel's
    /// `fs.nr_open`, the most a process may have); nil when neither could be set.
    public static func raiseToHardLimit() -> Change? {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return nil }
        let previous = UInt64(limit.rlim_cur)
        let hard = UInt64(limit.rlim_max)
        if previous == hard { return Change(previous: previous, current: previous, hard: hard) }
        var candidates = [limit.rlim_max]
        if limit.rlim_max == rlim_t.max, let ceiling = kernelCeiling() { candidates.append(rlim_t(ceiling)) }
        for candidate in candidates {
            var raised = limit
            raised.rlim_cur = candidate
            if setrlimit(resource, &raised) == 0 { return Change(previous: previous, current: UInt64(candidate), hard: hard) }
        }
        return nil
    }

    private static var resource: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }

    /// `/proc/sys/fs/nr_open`.
    private static func kernelCeiling() -> UInt64? {
        let fd = open("/proc/sys/fs/nr_open", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = read(fd, &bytes, bytes.count)
        guard count > 0 else { return nil }
        return UInt64(String(decoding: bytes[..<count], as: UTF8.self).filter(\.isNumber))
    }
}
