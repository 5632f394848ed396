import NATS
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineTesting

/// What the in-memory cluster does beyond the contract: the failures a test injects, and the
/// time it keeps by an injected clock.
@Suite("In-memory NATS cluster")
struct InMemoryNATSClusterTests {
    @Test func withoutQuorumEveryJetStreamCallTimesOutAndNothingIsStored() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let switches = try #require(cluster.inMemory)
            let client = try BackendClient(cluster)
            try client.jetStream.ensureStream(.init(name: "LOG", subjects: ["log"], replicas: 3))
            switches.loseQuorum()

            let lost = await client.publish("a", to: "log", conditions: .init(messageID: "a"))
            let management = #expect(throws: NATSError.self) { try client.jetStream.streamState("LOG") }
            switches.restoreQuorum()

            #expect(lost.failure?.isTimeout == true, "\(lost)")
            #expect(management?.isTimeout == true)
            #expect(try client.jetStream.streamState("LOG")?.messages == 0)
            #expect(try await client.publish("a", to: "log", conditions: .init(messageID: "a")).get() == .init(stream: "LOG", sequence: 1, duplicate: false))
        }
    }

    /// The case a writer cannot tell from a lost write: stored, but no answer. The retry with
    /// the same id and condition is refused for the condition, as on current servers; the same
    /// id without one is a duplicate.
    @Test func aPublishStoredWithoutAnAnswerIsRecognisedByItsIDWhenSentAgain() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let switches = try #require(cluster.inMemory)
            let client = try BackendClient(cluster)
            try client.jetStream.ensureStream(.init(name: "LOG", subjects: ["log"], replicas: 3))
            switches.failPublishes(.timedOut(stored: true))
            let unanswered = await client.publish("a", to: "log", conditions: .init(messageID: "w1", expectedLastSequence: 0))
            switches.failPublishes(.refused(.storeRefused("insufficient resources", operation: "publish to log")))
            let refused = await client.publish("b", to: "log")
            switches.failPublishes(nil)
            let retried = await client.publish("a", to: "log", conditions: .init(messageID: "w1", expectedLastSequence: 0))
            let retriedWithoutCondition = try await client.publish("a", to: "log", conditions: .init(messageID: "w1")).get()

            #expect(unanswered.failure?.isTimeout == true, "\(unanswered)")
            #expect(refused.failure?.jetStreamCode == 10077 && refused.failure?.detail == "insufficient resources", "\(refused)")
            #expect(retried.failure?.isWrongLastSequence == true, "\(retried)")
            #expect(retriedWithoutCondition == .init(stream: "LOG", sequence: 1, duplicate: true))
            #expect(try client.jetStream.streamState("LOG")?.messages == 1)
        }
    }

    /// A client cut off sees nothing, and what it sends is lost or times out; healed, its ordered
    /// consumer delivers what was stored meanwhile, in order, and a push consumer's message it
    /// held goes to the group's other member after the acknowledgement wait.
    @Test func aClientCutOffMissesNothingItsOrderedConsumerHadToDeliverOnceHealed() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let switches = try #require(cluster.inMemory)
            let cutOff = try BackendClient(cluster, name: "g1")
            let other = try BackendClient(cluster, name: "g2")
            try other.jetStream.ensureStream(.init(name: "LOG", subjects: ["log.>"], replicas: 3))
            let seen = Mailbox<NATSMessage>()
            let core = Mailbox<NATSMessage>()
            let subscriptions = [
                try cutOff.jetStream.subscribeOrdered(to: "log.>", from: .all, loop: cutOff.loop) { seen.put($0) },
                try cutOff.jetStream.messaging.subscribe(to: "news", loop: cutOff.loop) { core.put($0) },
            ]
            _ = try await other.publish("1", to: "log.a").get()
            #expect(try await seen.take(timeout: .seconds(5)).text == "1")

            switches.partition("g1")
            for index in 2...5 { _ = try await other.publish("\(index)", to: "log.a").get() }
            try other.jetStream.messaging.publish(Array("lost".utf8), to: "news")
            let ownWrite = await cutOff.publish("x", to: "log.b")
            await #expect(throws: Mailbox<NATSMessage>.Timeout.self) { _ = try await seen.take(timeout: .milliseconds(200)) }
            switches.heal("g1")

            var later: [String] = []
            for _ in 2...5 { later.append(try await seen.take(timeout: .seconds(5)).text) }
            #expect(later == ["2", "3", "4", "5"])
            #expect(ownWrite.failure?.isTimeout == true)
            await #expect(throws: Mailbox<NATSMessage>.Timeout.self, "a core message sent while cut off is gone") {
                _ = try await core.take(timeout: .milliseconds(200))
            }
            subscriptions.forEach { $0.cancel() }
        }
    }

    @Test func aPushConsumersMessageHeldByACutOffMemberGoesToAnotherAfterTheWait() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let switches = try #require(cluster.inMemory)
            let first = try BackendClient(cluster, name: "g1")
            let second = try BackendClient(cluster, name: "g2")
            try first.jetStream.ensureStream(.init(name: "INGEST", subjects: ["ingest.>"], replicas: 3, retention: .workQueue))
            try first.jetStream.ensurePushConsumer(.init(stream: "INGEST", name: "p0", filterSubject: "ingest.p0", deliverSubject: "deliver.p0",
                                                         group: "owners", ackWait: .milliseconds(200)))
            let toFirst = Mailbox<NATSMessage>()
            let toSecond = Mailbox<NATSMessage>()
            let members = [
                try first.jetStream.messaging.subscribe(to: "deliver.p0", queue: "owners", loop: first.loop) { toFirst.put($0) },
            ]
            _ = try await first.publish("batch", to: "ingest.p0").get()
            let held = try await toFirst.take(timeout: .seconds(5))
            switches.partition("g1")
            let taker = try second.jetStream.messaging.subscribe(to: "deliver.p0", queue: "owners", loop: second.loop) { toSecond.put($0) }
            let redelivered = try await toSecond.take(timeout: .seconds(5))
            first.jetStream.acknowledge(held)  // lost: g1 is cut off
            let stillThere = try second.jetStream.streamState("INGEST")?.messages
            // In memory an acknowledgement is taken before its publish returns.
            second.jetStream.acknowledge(redelivered)

            #expect(redelivered.text == "batch")
            #expect(stillThere == 1, "the cut-off member's acknowledgement is lost")
            #expect(try second.jetStream.streamState("INGEST")?.messages == 0, "acknowledged by the member that took it over")
            (members + [taker]).forEach { $0.cancel() }
        }
    }

    /// Message ids are remembered for the duplicate window and messages kept for the maximum
    /// age, both by the cluster's clock: a test moves it instead of waiting.
    @Test func theDuplicateWindowAndTheMaximumAgeGoByTheClustersClock() async throws {
        let clock = ManualClock()
        let cluster = InMemoryNATSCluster(clock: clock)
        let loop = EventLoop.start(name: "in-memory-clock")
        defer { loop.stop() }
        let jetStream = InMemoryJetStream(cluster.connect(name: "g1"))
        try jetStream.ensureStream(.init(name: "PROBE", subjects: ["probe"], replicas: 1, maximumAge: .seconds(60), duplicateWindow: .seconds(10)))
        let publish = { (id: String) async -> Result<JetStream.Acknowledgement, NATSError> in
            await withCheckedContinuation { done in
                jetStream.publish([], to: "probe", conditions: .init(messageID: id), loop: loop) { done.resume(returning: $0) }
            }
        }

        let first = try await publish("p").get()
        clock.advance(by: .seconds(9))
        let withinWindow = try await publish("p").get()
        clock.advance(by: .seconds(2))
        let pastWindow = try await publish("p").get()
        clock.advance(by: .seconds(55))
        let afterFirstAged = try jetStream.streamState("PROBE")

        #expect(first.sequence == 1 && withinWindow.duplicate && withinWindow.sequence == 1)
        #expect(pastWindow == .init(stream: "PROBE", sequence: 2, duplicate: false))
        #expect(afterFirstAged?.messages == 1 && afterFirstAged?.firstSequence == 2, "\(String(describing: afterFirstAged))")
    }

    /// The mappings it applies are read as the servers read them, and one it cannot apply is
    /// refused when the cluster is made, not ignored on the first publish.
    @Test func aSubjectMappingItCannotApplyIsRefused() async throws {
        let partitioned = try #require(SubjectMapping(source: "in.*.*", destination: "part.{{ partition(8, 2) }}.{{wildcard(1)}}.{{wildcard(2)}}"))
        #expect(partitioned.map("in.a.match-1") == "part.\(ChannelPartitioning(count: 8)!.partition(of: "match-1")).a.match-1")
        #expect(partitioned.map("in.a") == nil && partitioned.map("other.a.b") == nil)
        #expect(SubjectMapping(source: "in.*", destination: "part.{{split(1,-)}}") == nil)
        #expect(SubjectMapping(source: "in.*", destination: "part.{{partition(8,1,2)}}") == nil)
        #expect(SubjectMapping(source: "in.*", destination: "part.{{wildcard(1)") == nil)
        await #expect(throws: UnknownMapping.self) {
            try await NATSBackend.inMemory.withCluster(mappings: ["in.*": "part.{{random(8)}}"]) { _ in }
        }
    }

    @Test func aClosedClientIsToldSo() async throws {
        try await NATSBackend.inMemory.withCluster { cluster in
            let client = try BackendClient(cluster)
            try client.jetStream.ensureStream(.init(name: "LOG", subjects: ["log"], replicas: 1))
            client.jetStream.messaging.close()
            let published = await client.publish("a", to: "log")
            let sent = #expect(throws: NATSError.self) { try client.jetStream.messaging.publish([], to: "log") }
            #expect(published.failure?.description.contains("publish to log") == true, "\(published)")
            #expect(sent != nil && sent?.isTimeout == false)
        }
    }
}
