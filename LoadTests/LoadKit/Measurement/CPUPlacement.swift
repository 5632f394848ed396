/// Which CPUs each process of a benchmark may run on.
///
/// The mock APNs stands for Apple's servers, which in production run on other machines: it gets
/// CPUs of its own, so that what it spends on a million device pushes does not compete with the
/// gateway it measures. The gateway, the reference client (h2load) and the load generator
/// share the rest: a client and its ceiling meet the mock on the same CPUs. With one CPU there is
/// nothing to split and everything shares it.
public struct CPUPlacement: Sendable, Equatable {
    /// CPUs for the gateway, h2load and the load generator, in `taskset -c` list form ("0-2").
    public let clients: String?
    /// CPUs for the mock APNs.
    public let mock: String?

    /// `cpus` CPUs numbered from 0; the mock gets a quarter of them (at least one).
    public init(cpus: Int) {
        guard cpus >= 2 else {
            (clients, mock) = (nil, nil)
            return
        }
        let mockCPUs = max(1, cpus / 4)
        let first = cpus - mockCPUs
        clients = Self.list(0, first - 1)
        mock = Self.list(first, cpus - 1)
    }

    /// A human-readable line for the benchmark's header.
    public var description: String {
        guard let clients, let mock else { return "one CPU: all processes share it" }
        return "mock APNs on CPU \(mock), gateway, h2load and load generator on CPU \(clients)"
    }

    private static func list(_ first: Int, _ last: Int) -> String {
        first == last ? String(first) : "\(first)-\(last)"
    }
}
