/// Which CPUs each process of a benchmark may run on.
///
/// The mock APNs stands for Apple's servers, which in production run on other machines: it gets
/// CPUs of its own, so that what it spends on a million device pushes does not compete with the
/// gateway it measures. The gateway, the reference client (h2load) and the load generator
/// share the rest: a client and its ceiling meet the mock on the same CPUs. With one CPU there is
/// nothing to split and everything shares it.
public struct CPUPlacement: Sendable, Equatable {
    /// CPUs for the gateway, h2load and the load generator; nil: any.
    public let clientCPUs: ClosedRange<Int>?
    /// CPUs for the mock APNs; nil: any.
    public let mockCPUs: ClosedRange<Int>?
    /// The machine's CPU count.
    public let cpus: Int

    /// `cpus` CPUs numbered from 0; the mock gets a quarter of them (at least one).
    public init(cpus: Int) {
        self.cpus = max(1, cpus)
        guard cpus >= 2 else {
            (clientCPUs, mockCPUs) = (nil, nil)
            return
        }
        let first = cpus - max(1, cpus / 4)
        clientCPUs = 0...(first - 1)
        mockCPUs = first...(cpus - 1)
    }

    /// Every process on any CPU (`--no-pinning`).
    public static func shared(cpus: Int) -> CPUPlacement { CPUPlacement(unpinned: cpus) }

    private init(unpinned cpus: Int) {
        self.cpus = max(1, cpus)
        (clientCPUs, mockCPUs) = (nil, nil)
    }

    /// The clients' CPUs as `taskset -c` takes them ("0-2"); nil: any.
    public var clients: String? { clientCPUs.map(Self.list) }
    /// The mock's CPUs as `taskset -c` takes them; nil: any.
    public var mock: String? { mockCPUs.map(Self.list) }
    /// How many CPUs the mock may use: its default number of event loops.
    public var mockCPUCount: Int { mockCPUs?.count ?? cpus }

    /// A human-readable line for the report.
    public var description: String {
        guard let clients, let mock else { return "all processes on any of the \(cpus) CPU(s)" }
        return "mock APNs on CPU \(mock); gateway, h2load and load generator on CPU \(clients)"
    }

    private static func list(_ range: ClosedRange<Int>) -> String {
        range.count == 1 ? String(range.lowerBound) : "\(range.lowerBound)-\(range.upperBound)"
    }
}
