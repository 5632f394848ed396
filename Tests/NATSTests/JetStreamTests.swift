import Foundation
import Synchronization
import NATS
import NATSServers
import Testing
import TestSlots
import TouchlineRuntime
import TouchlineCore
import TouchlineTesting

/// The NATS wrapper against a real 3-node JetStream cluster on loopback.
@Suite("JetStream on a real cluster", .serialized, .heavy(weight: 3))
struct JetStreamTests {
    @Test func anAcknowledgedPublishIsStoredOnceAndADuplicateIdIsNotStoredAgain() async throws {
        let cluster = try await NATSCluster.start()
        let client = try await Client.connect(to: cluster)
        try client.jetStream.ensureStreamPatiently(.init(name: "EVENTS", subjects: ["events.>"], replicas: 3))

        let first = try await client.publishOnceTheStreamHears(Array("goal".utf8), to: "events.m1",
                                                               conditions: .init(messageID: "m1:1")).get()
        let again = try await client.publish(Array("goal".utf8), to: "events.m1", conditions: .init(messageID: "m1:1")).get()
        let second = try await client.publish(Array("card".utf8), to: "events.m1", conditions: .init(messageID: "m1:2")).get()

        #expect(first == .init(stream: "EVENTS", sequence: 1, duplicate: false))
        #expect(again.duplicate && again.sequence == 1)
        #expect(second.sequence == 2 && !second.duplicate)
        let state = try #require(try client.jetStream.streamState("EVENTS"))
        #expect(state.messages == 2 && state.replicas == 3)
        #expect(try client.jetStream.streamState("MISSING") == nil)
    }

    /// Six writers at once, each expecting the stream's last sequence, on one and on three
    /// replicas: exactly one is stored every time. The backend's fencing rests on this.
    @Test(arguments: [1, 3])
    func concurrentWritesExpectingTheStreamsLastSequenceStoreExactlyOne(replicas: Int) async throws {
        let cluster = try await NATSCluster.start(size: replicas)
        let clients = try await [Client.connect(to: cluster), Client.connect(to: cluster), Client.connect(to: cluster)]
        try clients[0].jetStream.ensureStreamPatiently(.init(name: "ONE", subjects: ["one.>"], replicas: replicas))
        // 0 expects an empty stream.
        let first = try await clients[0].publishOnceTheStreamHears(Array("a".utf8), to: "one.x", conditions: .init(expectedLastSequence: 0)).get()
        let notEmpty = await clients[1].publishOnceTheStreamHears(Array("a".utf8), to: "one.x", conditions: .init(expectedLastSequence: 0))
        #expect(first.sequence == 1 && notEmpty.failure?.isWrongLastSequence == true, "\(notEmpty)")
        try await Client.waitUntilTheStreamHears(clients, on: "one.warm")
        for round in 0..<20 {
            let last = try await clients[0].publish(Array("a".utf8), to: "one.x").get()
            let stored = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<6 {
                    group.addTask {
                        let result = await clients[index % 3].publish(Array("\(index)".utf8), to: "one.y\(index)",
                                                                     conditions: .init(expectedLastSequence: last.sequence))
                        return (try? result.get()) != nil
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(stored == 1, "round \(round): \(stored) of 6 writes expecting sequence \(last.sequence) were stored")
        }
    }

    /// Six writers at once to one key, each expecting the key's last sequence, on three
    /// replicas: exactly one is stored every round, while other keys are written around them.
    /// nats-server 2.9.10 failed this (the leader checked the subject's sequence before
    /// proposing, counting no write in flight: 96 of 120 racing writes stored in one run), which
    /// is one reason the gateway refuses servers older than 2.11; slice checkpoints rest on it.
    @Test func concurrentWritesExpectingAKeysLastSequenceStoreExactlyOneOnThreeReplicas() async throws {
        let cluster = try await NATSCluster.start(size: 3)
        let clients = try await [Client.connect(to: cluster), Client.connect(to: cluster), Client.connect(to: cluster)]
        try clients[0].jetStream.ensureStreamPatiently(.init(name: "KEYS", subjects: ["keys.>"], replicas: 3))
        let first = try await clients[0].publishOnceTheStreamHears(Array("a".utf8), to: "keys.k",
                                                                   conditions: .init(expectedLastSubjectSequence: 0)).get()
        let notNew = await clients[1].publishOnceTheStreamHears(Array("a".utf8), to: "keys.k", conditions: .init(expectedLastSubjectSequence: 0))
        #expect(first.sequence == 1 && notNew.failure?.isWrongLastSequence == true, "\(notNew)")
        try await Client.waitUntilTheStreamHears(clients, on: "keys.warm")
        var last = first.sequence
        for round in 0..<20 {
            let results = await withTaskGroup(of: UInt64?.self) { group in
                for index in 0..<6 {
                    group.addTask { [last] in
                        let result = await clients[index % 3].publish(Array("\(index)".utf8), to: "keys.k",
                                                                     conditions: .init(expectedLastSubjectSequence: last))
                        return try? result.get().sequence
                    }
                }
                group.addTask { try? await clients[round % 3].publish(Array("other".utf8), to: "keys.other\(round)").get().sequence }
                return await group.reduce(into: [UInt64]()) { if let sequence = $1 { $0.append(sequence) } }
            }
            let onTheKey = try #require(try clients[0].jetStream.lastMessage(stream: "KEYS", subject: "keys.k")).sequence
            #expect(results.count == 2, "round \(round): \(results.count - 1) of 6 writes expecting the key at \(last) were stored")
            #expect(onTheKey > last)
            last = onTheKey
        }
    }

    @Test func anOrderedConsumerDeliversInStreamOrderFromASequenceOrTheLastOfEachSubject() async throws {
        let cluster = try await NATSCluster.start(size: 1)
        let client = try await Client.connect(to: cluster)
        try client.jetStream.ensureStreamPatiently(.init(name: "EVENTS", subjects: ["events.>"], replicas: 1))
        for index in 1...6 {
            _ = try await client.publish(Array("\(index)".utf8), to: "events.m\(index % 2)").get()
        }

        let fromThree = try await client.collect(4, from: "events.>", start: .sequence(3))
        let lastOfEach = try await client.collect(2, from: "events.>", start: .lastPerSubject)

        #expect(fromThree.map { String(decoding: $0.payload, as: UTF8.self) } == ["3", "4", "5", "6"])
        #expect(fromThree.map { $0.stream?.sequence } == [3, 4, 5, 6])
        #expect(fromThree.last?.stream?.pending == 0)
        #expect(Set(lastOfEach.map { "\($0.subject)=\(String(decoding: $0.payload, as: UTF8.self))" }) == ["events.m0=6", "events.m1=5"])
    }

    @Test func aGatewayThatCannotReachItsClusterIsToldWhichServersAndWhy() async throws {
        let loop = EventLoop.start(name: "nats-refused")
        defer { loop.stop() }
        let settings = NATSSettings(servers: ["nats://127.0.0.1:1", "nats://127.0.0.1:2"], name: "refused",
                                    connectTimeout: .milliseconds(200))
        let failure = #expect(throws: NATSError.self) { try NATSConnection.connect(settings, loop: loop, events: { _ in }) }
        #expect(failure?.description.contains("nats://127.0.0.1:1, nats://127.0.0.1:2") == true, "\(String(describing: failure))")
    }

    @Test func killingTheStreamLeaderLosesNoAcknowledgedPublishAndPublishingGoesOn() async throws {
        let cluster = try await NATSCluster.start()
        let client = try await Client.connect(to: cluster)
        let created = try client.jetStream.ensureStreamPatiently(.init(name: "EVENTS", subjects: ["events.>"], replicas: 3))
        let leader = try #require(cluster.nodes.firstIndex { $0.name == created.leader }, "leader \(String(describing: created.leader))")
        var acknowledged = Set<UInt64>()
        var failures = 0
        for index in 0..<400 {
            if index == 100 { await cluster.kill(leader) }
            // A publish that fails (the leader was lost) is retried with the same id: the id
            // keeps the retry from storing it twice.
            while true {
                let result = await client.publish(Array("\(index)".utf8), to: "events.m\(index % 8)",
                                                  conditions: .init(messageID: "m:\(index)"))
                if case .success(let ack) = result { acknowledged.insert(ack.sequence); break }
                failures += 1
                #expect(failures < 200, "publishing did not resume after the node was killed")
                if failures >= 200 { return }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        let state = try #require(try client.jetStream.streamState("EVENTS"))
        #expect(acknowledged.count == 400)
        #expect(state.messages == 400, "every acknowledged publish is stored, once")
        #expect(state.leader != created.leader)
        try await cluster.restart(leader)
        // The node back, the stream may answer nothing for a moment while it rejoins, or answer
        // from the rejoining node's own copy (seen: 100 messages, what it had when killed) until
        // it has caught up: read until the stream shows every message, for at most 10 s.
        var afterRestart: JetStream.StreamState?
        for _ in 0..<100 where afterRestart?.messages != 400 {
            afterRestart = try? client.jetStream.streamState("EVENTS")
            if afterRestart?.messages != 400 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(afterRestart?.messages == 400)
    }

    @Test func coreSubscriptionsDeliverOnTheirLoopAndAnswersReachAnInbox() async throws {
        let cluster = try await NATSCluster.start(size: 1)
        let client = try await Client.connect(to: cluster)
        let inbox = client.connection.newInbox()
        let answered = Mailbox<NATSMessage>()
        let server = try NATSSubscription.subscribe(client.connection, to: "owner.p7", queue: "owners", loop: client.loop) { request in
            #expect(client.loop.inEventLoop)
            guard let reply = request.reply else { return }
            try? client.connection.publish(Array("ok:\(String(decoding: request.payload, as: UTF8.self))".utf8), to: reply)
        }
        let replies = try NATSSubscription.subscribe(client.connection, to: inbox, loop: client.loop) { answered.put($0) }
        try client.connection.flush(timeout: .seconds(5))
        try client.connection.publish(Array("batch".utf8), to: "owner.p7", reply: inbox)

        let answer = try await answered.take(timeout: .seconds(10))
        #expect(String(decoding: answer.payload, as: UTF8.self) == "ok:batch")
        withExtendedLifetime((server, replies)) {}
    }

    /// The benchmark's ceiling publisher removes its streams so that the phases after it measure
    /// a cluster without them.
    @Test func aDeletedStreamIsGoneAndDeletingAMissingOneIsNoError() async throws {
        let cluster = try await NATSCluster.start(size: 1)
        let client = try await Client.connect(to: cluster)
        try client.jetStream.ensureStreamPatiently(.init(name: "GONE", subjects: ["gone.>"], replicas: 1))
        _ = try await client.publishOnceTheStreamHears(Array("goal".utf8), to: "gone.m1").get()
        #expect(try client.jetStream.streamState("GONE")?.messages == 1)

        try client.jetStream.deleteStream("GONE")
        #expect(try client.jetStream.streamState("GONE") == nil)
        try client.jetStream.deleteStream("GONE")
    }

    /// A gateway's publish is on the wire when the call returns: libnats' flusher would hold it
    /// for a millisecond first, on every event's path to APNs.
    @Test func aPublishIsWrittenToTheSocketByTheCallThatMakesIt() async throws {
        let cluster = try await NATSCluster.start(size: 1)
        let client = try await Client.connect(to: cluster)
        try client.connection.flush(timeout: .seconds(5))
        for index in 0..<50 {
            try client.connection.publish(Array("event \(index)".utf8), to: "events.m1", reply: nil)
            let buffered = client.connection.bufferedBytes
            #expect(buffered == 0, "publish \(index) left \(buffered) bytes in the client's buffer")
        }
    }
}

/// A connection and JetStream context on a loop of their own, with async helpers.
private final class Client: Sendable {
    let loop: EventLoop
    let connection: NATSConnection
    let jetStream: JetStream

    private init(loop: EventLoop, connection: NATSConnection, jetStream: JetStream) {
        self.loop = loop
        self.connection = connection
        self.jetStream = jetStream
    }

    deinit {
        connection.close()
        loop.stop()
    }

    static func connect(to cluster: NATSCluster) async throws -> Client {
        let loop = EventLoop.start(name: "nats-test")
        let connection = try cluster.connect(name: "test", loop: loop)
        return Client(loop: loop, connection: connection, jetStream: try JetStream(connection))
    }

    func publish(_ payload: [UInt8], to subject: String,
                 conditions: JetStream.PublishConditions = .init()) async -> Result<JetStream.Acknowledgement, NATSError> {
        await withCheckedContinuation { done in
            jetStream.publish(payload, to: subject, conditions: conditions, loop: loop) { done.resume(returning: $0) }
        }
    }

    /// ``publish(_:to:conditions:)`` sent again while no server answers for the subject: a
    /// stream just made has a leader before every server of the cluster routes its subjects to
    /// it (seen with nats-server 2.11 under a full parallel run). Nothing was stored then.
    func publishOnceTheStreamHears(_ payload: [UInt8], to subject: String,
                                   conditions: JetStream.PublishConditions = .init()) async -> Result<JetStream.Acknowledgement, NATSError> {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let result = await publish(payload, to: subject, conditions: conditions)
            guard case .failure(let error) = result, error.status == NATSError.noResponders(operation: "").status,
                  ContinuousClock.now < deadline else { return result }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Until the server of each of `clients` takes publishes to the new stream (its subjects'
    /// interest reaches every server of the cluster a moment after the stream is made; before,
    /// a publish is answered "no responders", which a race would count as a lost write).
    static func waitUntilTheStreamHears(_ clients: [Client], on subject: String) async throws {
        for client in clients { _ = try await client.publishOnceTheStreamHears(Array("ready".utf8), to: subject).get() }
    }

    func collect(_ count: Int, from subject: String, start: JetStream.DeliveryStart) async throws -> [NATSMessage] {
        try await jetStream.collect(count, from: subject, start: start, on: loop)
    }
}

/// Values handed from a loop to a test, taken in order with a bound on the wait.
final class Mailbox<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func put(_ value: Value) { values.withLock { $0.append(value) } }

    struct Timeout: Error {}

    func take(timeout: Duration) async throws -> Value {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let value = values.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return value }
            guard ContinuousClock.now < deadline else { throw Timeout() }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}

@Suite("Request-reply from a loop", .heavy)
struct NATSRequestsTests {
    @Test func aRequestGetsItsAnswerOrNoRespondersOrATimeoutOnItsLoop() async throws {
        let cluster = try await NATSCluster.start(size: 1)
        let client = try await Client.connect(to: cluster)
        let responder = try NATSSubscription.subscribe(client.connection, to: "owner.p1", loop: client.loop) { request in
            guard let reply = request.reply else { return }
            try? client.connection.publish(request.payload.reversed(), to: reply)
        }
        let silent = try NATSSubscription.subscribe(client.connection, to: "owner.p2", loop: client.loop) { _ in }
        try client.connection.flush(timeout: .seconds(5))
        let results = Mailbox<String>()
        let requests = try client.loop.sync { try NATSRequests(connection: client.connection, loop: client.loop) }
        client.loop.execute {
            for (subject, payload) in [("owner.p1", "abc"), ("owner.p9", "x"), ("owner.p2", "y"), ("owner.p1", "123")] {
                requests.request(Array(payload.utf8), to: subject, timeout: .milliseconds(300)) { result in
                    #expect(client.loop.inEventLoop)
                    switch result {
                    case .success(let answer): results.put("\(subject) answered \(String(decoding: answer.payload, as: UTF8.self))")
                    case .failure(let failure): results.put(failure.description)
                    }
                }
            }
        }
        var seen: Set<String> = []
        for _ in 0..<4 { seen.insert(try await results.take(timeout: .seconds(10))) }
        #expect(seen == ["owner.p1 answered cba", "owner.p1 answered 321", "no responder on owner.p9",
                         "no answer on owner.p2 within 0.3 seconds"])
        #expect(try client.loop.sync { requests.outstanding } == 0)
        withExtendedLifetime((responder, silent)) {}
    }
}

@Suite("Key-value buckets without blocking calls", .heavy(weight: 3))
struct KeyValueBucketTests {
    @Test func aBucketKeepsTheLastValueOfEachKeyAndItsRevisionIsTheCompareAndSetSequence() async throws {
        let cluster = try await NATSCluster.start()
        let client = try await Client.connect(to: cluster)
        try client.jetStream.ensureKeyValueBucketPatiently("leases", replicas: 3)
        try client.jetStream.ensureKeyValueBucketPatiently("leases", replicas: 3)
        let p0 = JetStream.keySubject(bucket: "leases", key: "partition.0")

        let created = try await client.publish(Array("a".utf8), to: p0, conditions: .init(expectedLastSequence: 0)).get()
        let renewed = try await client.publish(Array("a2".utf8), to: p0, conditions: .init(expectedLastSequence: created.sequence)).get()
        let stolen = await client.publish(Array("b".utf8), to: p0, conditions: .init(expectedLastSequence: created.sequence))
        _ = try await client.publish(Array("c".utf8), to: JetStream.keySubject(bucket: "leases", key: "member.c"),
                                     conditions: .init(expectedLastSequence: renewed.sequence)).get()

        #expect(stolen.failure?.isWrongLastSequence == true)
        let values = try await client.collect(2, from: "$KV.leases.>", start: .lastPerSubject)
        #expect(values.map { "\($0.subject)=\(String(decoding: $0.payload, as: UTF8.self))" } == ["$KV.leases.partition.0=a2", "$KV.leases.member.c=c"])
        #expect(values.first?.stream?.sequence == renewed.sequence)
        let state = try #require(try client.jetStream.streamState("KV_leases"))
        #expect(state.messages == 2 && state.replicas == 3, "history 1: one value per key")
    }
}

extension JetStream {
    /// ``ensureStream(_:)``, tried again while it times out, as the gateway's own calls are: a
    /// stream of three replicas made just after the cluster started can time out on a busy machine.
    @discardableResult
    func ensureStreamPatiently(_ settings: StreamSettings) throws(NATSError) -> StreamState {
        let created = try Self.retryingWhileForming { () throws(NATSError) in try ensureStream(settings) }
        try untilLed(settings.name)
        return created
    }

    /// ``ensureKeyValueBucket(_:replicas:history:maximumValueSize:)``, tried again while it times
    /// out, and until its stream has a leader.
    func ensureKeyValueBucketPatiently(_ name: String, replicas: Int) throws(NATSError) {
        try Self.retryingWhileForming { () throws(NATSError) in try ensureKeyValueBucket(name, replicas: replicas) }
        try untilLed("KV_\(name)")
    }

    /// Waits until `stream`'s own leader answers: a replicated stream just created takes a
    /// moment to elect one, and a publish before that finds no responders (seen under a full
    /// parallel run with nats-server 2.15).
    private func untilLed(_ stream: String) throws(NATSError) {
        _ = try Self.retryingWhileForming { () throws(NATSError) -> StreamState in
            guard let state = try streamState(stream), state.leader != nil || state.replicas <= 1 else {
                throw .noResponders(operation: "stream \(stream)'s leader")
            }
            return state
        }
    }
}
