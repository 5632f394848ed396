import Synchronization
import Testing
import TouchlineRuntime

/// The gateway's parts' one lifecycle (``GatewayServices``): started in order, shut down in the
/// reverse order and then closed in the reverse order; a cut reaches the part shutting down and
/// those still to come, never one already shut down; a failed start closes what started.
@Suite struct GatewayServicesTests {
    /// What the parts did, in order.
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func note(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// A part that notes each call; `onShutdown` runs as its graceful shutdown begins.
    struct Part: GatewayService {
        let name: String
        let journal: Journal
        var fails = false
        var onShutdown: @Sendable () -> Void = {}

        struct Refused: Error {}

        func start() throws {
            if fails { throw Refused() }
            journal.note("start \(name)")
        }

        func shutdown(_ grace: ShutdownGrace) async {
            onShutdown()
            journal.note("shutdown \(name)\(grace.isCutShort() ? " (no grace)" : "")")
        }

        func cutShort() { journal.note("cut \(name)") }
        func close() { journal.note("close \(name)") }
    }

    static let grace = ShutdownGrace(requests: .seconds(2), answers: .seconds(3), isCutShort: { false })

    @Test func partsStartInOrderShutDownInReverseThenCloseInReverse() async throws {
        let journal = Journal()
        let services = GatewayServices()
        for name in ["loops", "stores", "front"] { try services.start(Part(name: name, journal: journal)) }
        await services.shutdown(Self.grace)
        #expect(journal.all == ["start loops", "start stores", "start front",
                                "shutdown front", "shutdown stores", "shutdown loops",
                                "close front", "close stores", "close loops"])
    }

    @Test func aCutReachesThePartShuttingDownAndThoseToComeOnly() async throws {
        let journal = Journal()
        let services = GatewayServices()
        try services.start(Part(name: "loops", journal: journal))
        try services.start(Part(name: "answers", journal: journal, onShutdown: { services.cutShort() }))
        try services.start(Part(name: "front", journal: journal))
        await services.shutdown(Self.grace)
        #expect(journal.all == ["start loops", "start answers", "start front",
                                "shutdown front", "cut answers", "cut loops", "shutdown answers", "shutdown loops",
                                "close front", "close answers", "close loops"])
    }

    @Test func aStartThatFailsClosesThePartsStartedBeforeInReverse() throws {
        let journal = Journal()
        let services = GatewayServices()
        try services.start(Part(name: "mock", journal: journal))
        try services.start(Part(name: "loops", journal: journal))
        #expect(throws: Part.Refused.self) { try services.start(Part(name: "stores", journal: journal, fails: true)) }
        services.closeAll()
        #expect(journal.all == ["start mock", "start loops", "close loops", "close mock"])
        // Closed once: a later cut or close finds nothing.
        services.cutShort()
        services.closeAll()
        #expect(journal.all.count == 4)
    }
}
