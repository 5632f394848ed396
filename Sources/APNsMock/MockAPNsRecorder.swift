import HTTP2
import Synchronization
import TouchlineCore

/// One request as the mock saw and answered it, for assertions in tests.
public struct MockAPNsRecordedRequest: Sendable {
    /// Connections are numbered from 1 in accept order.
    public var connection: Int
    public var port: MockAPNsPort
    public var endpoint: MockAPNsEndpoint
    public var streamID: Int32
    public var method: String
    public var path: String
    /// Every request header as received, pseudo-headers included.
    public var headers: [HTTP2Header]
    public var body: [UInt8]
    public var status: Int
    /// Nil for 2xx answers.
    public var reason: MockAPNsReason?
    /// Why the request was rejected, in words.
    public var detail: String?
    /// Headers of the answer (`apns-id`, `apns-unique-id`, `apns-channel-id`, ...).
    public var responseHeaders: [HTTP2Header]
    public var receivedAt: UnixTime
    /// Device endpoint: the token from the path.
    public var deviceToken: String?
    /// Broadcast, read and delete: `apns-channel-id`; create: the new channel's id.
    public var channelID: String?
    /// `apns-priority` as a number (device pushes default to 10).
    public var priority: Int?
    /// `aps.event` of a Live Activity payload.
    public var event: String?

    /// The first request header named `name` (lowercase).
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
    /// The first response header named `name` (lowercase).
    public func responseHeader(_ name: String) -> String? { responseHeaders.first { $0.name == name }?.value }
    /// The body as text.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// Answer counts by endpoint, status and reason.
public struct MockAPNsCounters: Sendable, CustomStringConvertible {
    public struct Key: Hashable, Sendable {
        public var endpoint: MockAPNsEndpoint
        public var status: Int
        public var reason: MockAPNsReason?
    }

    public internal(set) var answers: [Key: Int] = [:]
    public internal(set) var connectionsAccepted = 0
    /// Frames the server's HTTP/2 layer rejected: streams beyond the announced concurrency
    /// limit or protocol violations. Zero for a correct client.
    public internal(set) var framesRejected = 0
    /// Answers withheld because the client had sent GOAWAY (``MockAPNsConfiguration/Faults/silentAfterClientGoaway``):
    /// requests processed (and counted in ``answers``) whose client never heard back. Zero for a
    /// client that says GOAWAY only once its last stream has ended.
    public internal(set) var answersWithheld = 0

    /// Answers matching every given filter.
    public func count(endpoint: MockAPNsEndpoint? = nil, status: Int? = nil, reason: MockAPNsReason? = nil) -> Int {
        answers.reduce(0) { sum, entry in
            let k = entry.key
            guard endpoint.map({ $0 == k.endpoint }) ?? true, status.map({ $0 == k.status }) ?? true,
                  reason.map({ $0 == k.reason }) ?? true else { return sum }
            return sum + entry.value
        }
    }

    /// All answers.
    public var total: Int { count() }

    mutating func merge(_ other: MockAPNsCounters) {
        answers.merge(other.answers, uniquingKeysWith: +)
        connectionsAccepted += other.connectionsAccepted
        framesRejected += other.framesRejected
        answersWithheld += other.answersWithheld
    }

    /// One line per endpoint/status/reason, sorted, for the command line's exit report.
    public var description: String {
        var lines = ["connections accepted: \(connectionsAccepted)", "frames rejected: \(framesRejected)"]
        if answersWithheld > 0 { lines.append("answers withheld after the client's GOAWAY: \(answersWithheld)") }
        let sorted = answers.sorted { a, b in
            (a.key.endpoint.rawValue, a.key.status, a.key.reason?.rawValue ?? "") < (b.key.endpoint.rawValue, b.key.status, b.key.reason?.rawValue ?? "")
        }
        for (key, n) in sorted {
            lines.append("\(key.endpoint.rawValue) \(key.status)\(key.reason.map { " \($0.rawValue)" } ?? ""): \(n)")
        }
        return lines.joined(separator: "\n")
    }
}

/// Counters of one event loop: only that loop writes them, so its lock is never contended
/// except by a reader taking a snapshot. A flat array indexed by endpoint and reason keeps the
/// per-request cost to one lock and one increment.
final class MockAPNsCounterShard: Sendable {
    private struct Slots {
        var answers = [Int](repeating: 0, count: MockAPNsEndpoint.allCases.count * (MockAPNsReason.allCases.count + 1))
        var connections = 0
        var framesRejected = 0
        var answersWithheld = 0
    }

    private let slots = Mutex(Slots())
    private static let reasons = MockAPNsReason.allCases
    private static let endpoints = MockAPNsEndpoint.allCases

    /// Counts one answer; a nil reason means the endpoint's success status.
    func count(endpoint: MockAPNsEndpoint, reason: MockAPNsReason?) {
        let reasonSlot = reason.map { reason in Self.reasons.firstIndex(of: reason)! + 1 } ?? 0
        let index = Self.endpoints.firstIndex(of: endpoint)! * (Self.reasons.count + 1) + reasonSlot
        slots.withLock { $0.answers[index] += 1 }
    }

    func countConnection() {
        slots.withLock { $0.connections += 1 }
    }

    func countRejectedFrame() {
        slots.withLock { $0.framesRejected += 1 }
    }

    func countWithheldAnswer() {
        slots.withLock { $0.answersWithheld += 1 }
    }

    var snapshot: MockAPNsCounters {
        let copy = slots.withLock { $0 }
        var counters = MockAPNsCounters()
        counters.connectionsAccepted = copy.connections
        counters.framesRejected = copy.framesRejected
        counters.answersWithheld = copy.answersWithheld
        for (index, n) in copy.answers.enumerated() where n > 0 {
            let endpoint = Self.endpoints[index / (Self.reasons.count + 1)]
            let reasonSlot = index % (Self.reasons.count + 1)
            let reason = reasonSlot == 0 ? nil : Self.reasons[reasonSlot - 1]
            let key = MockAPNsCounters.Key(endpoint: endpoint, status: reason?.status ?? endpoint.successStatus, reason: reason)
            counters.answers[key] = n
        }
        return counters
    }

    func reset() { slots.withLock { $0 = Slots() } }
}

extension MockAPNsEndpoint {
    /// The status of a successful answer.
    var successStatus: Int {
        switch self {
        case .createChannel: 201
        case .deleteChannel: 204
        default: 200
        }
    }
}

/// The most recent requests, up to a capacity (a ring), shared by all loops.
final class MockAPNsRecording: Sendable {
    private struct Ring {
        var items: [MockAPNsRecordedRequest] = []
        var next = 0
    }

    let capacity: Int
    private let ring = Mutex(Ring())

    init(capacity: Int) { self.capacity = capacity }

    var isEnabled: Bool { capacity > 0 }

    func append(_ request: MockAPNsRecordedRequest) {
        guard capacity > 0 else { return }
        ring.withLock { r in
            if r.items.count < capacity {
                r.items.append(request)
            } else {
                r.items[r.next] = request
                r.next = (r.next + 1) % capacity
            }
        }
    }

    /// Oldest first.
    var snapshot: [MockAPNsRecordedRequest] {
        ring.withLock { r in Array(r.items[r.next...] + r.items[..<r.next]) }
    }

    func removeAll() { ring.withLock { $0 = Ring() } }
}
