import NATS
import Testing
import TouchlineCore
import TouchlineRuntime
import TouchlineTesting

/// What the cluster code relies on from JetStream, asserted once and held by both backends: real
/// nats-server (each case takes a heavy test's slot for its server, see ``NATSBackend``) and the
/// in-memory cluster. Where they differed, the in-memory one was changed.
@Suite("JetStream contract, on nats-server and in memory")
struct JetStreamContractTests {
    @Test(arguments: NATSBackend.allCases)
    func aMessageIDIsStoredOnceWithinTheDuplicateWindow(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            try client.jetStream.ensureStream(.init(name: "EVENTS", subjects: ["events.>"], replicas: 1))

            let first = try await client.publish("goal", to: "events.m1", conditions: .init(messageID: "m1:1")).get()
            let again = try await client.publish("goal", to: "events.m1", conditions: .init(messageID: "m1:1")).get()
            let second = try await client.publish("card", to: "events.m1", conditions: .init(messageID: "m1:2")).get()

            #expect(first == .init(stream: "EVENTS", sequence: 1, duplicate: false))
            #expect(again == .init(stream: "EVENTS", sequence: 1, duplicate: true))
            #expect(second == .init(stream: "EVENTS", sequence: 2, duplicate: false))
            let state = try #require(try client.jetStream.streamState("EVENTS"))
            #expect(state.messages == 2 && state.firstSequence == 1 && state.lastSequence == 2 && state.replicas == 1)
            #expect(try client.jetStream.streamState("MISSING") == nil)
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aCompareAndSetOnTheStreamsLastSequenceLosesToTheWriteBeforeIt(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            let other = try BackendClient(cluster, name: "other")
            try client.jetStream.ensureStream(.init(name: "LOG", subjects: ["log.>"], replicas: 1))

            let first = try await client.publish("a", to: "log.p0", conditions: .init(expectedLastSequence: 0)).get()
            let secondFirst = await other.publish("b", to: "log.p0", conditions: .init(expectedLastSequence: 0))
            let next = try await other.publish("a", to: "log.p1", conditions: .init(expectedLastSequence: first.sequence)).get()
            let stale = await client.publish("b", to: "log.p0", conditions: .init(expectedLastSequence: first.sequence))
            // A retry of a stored write (same id, same condition): 2.11 answers it as a duplicate
            // (the id checked first), 2.15 and the in-memory cluster refuse it for its condition
            // (checked first): a writer must take both. Without a condition it is a duplicate.
            // The message at the place it expected carries its id: what a writer whose answer
            // was lost reads.
            let retried = try await client.publish("c", to: "log.p9", conditions: .init(messageID: "w1", expectedLastSequence: next.sequence)).get()
            let retriedAgain = await client.publish("c", to: "log.p9", conditions: .init(messageID: "w1", expectedLastSequence: next.sequence))
            let retriedWithoutCondition = try await client.publish("c", to: "log.p9", conditions: .init(messageID: "w1")).get()
            let storedID = try await client.messageID(in: "LOG", at: retried.sequence).get()
            let withoutID = try await client.messageID(in: "LOG", at: first.sequence).get()
            let beyondTheEnd = try await client.messageID(in: "LOG", at: retried.sequence + 1).get()
            let missingStream = await client.messageID(in: "MISSING", at: 1)

            #expect(secondFirst.failure?.isWrongLastSequence == true, "\(secondFirst)")
            #expect(next.sequence == 2)
            #expect(stale.failure?.isWrongLastSequence == true && stale.failure?.isTimeout == false, "\(stale)")
            #expect(stale.failure?.description.contains("log.p0") == true, "\(stale)")
            #expect(retried == .init(stream: "LOG", sequence: 3, duplicate: false))
            switch retriedAgain {
            case .success(let acknowledgement): #expect(acknowledgement == .init(stream: "LOG", sequence: 3, duplicate: true))
            case .failure(let refusal): #expect(refusal.isWrongLastSequence, "\(refusal)")
            }
            #expect(retriedWithoutCondition == .init(stream: "LOG", sequence: 3, duplicate: true))
            #expect(storedID == "w1" && withoutID == nil && beyondTheEnd == nil)
            #expect(missingStream.failure != nil, "\(missingStream)")
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aPublishNoStreamTakesFailsAtOnceAndAMissingStreamIsNamedSo(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            let refused = await client.publish("x", to: "nowhere.1")
            let failure = try #require(refused.failure)
            #expect(failure.status == NATSError.noResponders(operation: "").status && failure.jetStreamCode == 0, "\(failure)")
            let lastOfMissing = #expect(throws: NATSError.self) { try client.jetStream.lastMessage(stream: "MISSING", subject: "nowhere.1") }
            #expect(lastOfMissing.map { ($0.status, $0.jetStreamCode) } ?? (0, 0) == (NATSError.streamNotFound(operation: "").status, 10059),
                    "\(String(describing: lastOfMissing))")
            #expect(try client.jetStream.messageCount(stream: "MISSING", subject: "nowhere.1") == 0)
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func anOrderedConsumerDeliversOnItsLoopInStreamOrderFromItsStart(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            try client.jetStream.ensureStream(.init(name: "EVENTS", subjects: ["events.>"], replicas: 1))
            for index in 1...6 { _ = try await client.publish("\(index)", to: "events.m\(index % 2)", headers: ["Writer": "w\(index)"]).get() }

            let all = try await client.collect(6, from: "events.>", start: .all)
            let fromThree = try await client.collect(4, from: "events.>", start: .sequence(3))
            let lastOfEach = try await client.collect(2, from: "events.>", start: .lastPerSubject)
            let oneSubject = try await client.collect(3, from: "events.m1", start: .all)

            #expect(all.map(\.text) == ["1", "2", "3", "4", "5", "6"])
            #expect(all.map { $0.stream?.sequence } == [1, 2, 3, 4, 5, 6])
            #expect(all.map { $0.stream?.pending } == [5, 4, 3, 2, 1, 0])
            #expect(all.allSatisfy { $0.stream?.stream == "EVENTS" && ($0.stream?.timestampNanoseconds ?? 0) > 0 })
            #expect(all.map { $0.headers["Writer"] } == ["w1", "w2", "w3", "w4", "w5", "w6"])
            #expect(fromThree.map(\.text) == ["3", "4", "5", "6"])
            #expect(lastOfEach.map { "\($0.subject)=\($0.text)" } == ["events.m1=5", "events.m0=6"])
            #expect(oneSubject.map(\.text) == ["1", "3", "5"])
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func anOrderedConsumerGoesOnWithWhatIsStoredLaterAndNewStartsThere(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            let writer = try BackendClient(cluster, name: "writer")
            try client.jetStream.ensureStream(.init(name: "LOG", subjects: ["log"], replicas: 1))
            _ = try await writer.publish("old", to: "log").get()
            let everything = Mailbox<NATSMessage>()
            let fresh = Mailbox<NATSMessage>()
            let loop = client.loop
            let subscriptions = [
                try client.jetStream.subscribeOrdered(to: "log", from: .all, loop: loop) { message in
                    #expect(loop.inEventLoop)
                    everything.put(message)
                },
                try client.jetStream.subscribeOrdered(to: "log", from: .new, loop: loop) { fresh.put($0) },
            ]
            #expect(try await everything.take(timeout: .seconds(10)).text == "old")
            for index in 1...20 { _ = try await writer.publish("\(index)", to: "log").get() }

            var later: [String] = []
            var new: [String] = []
            for _ in 1...20 {
                later.append(try await everything.take(timeout: .seconds(10)).text)
                new.append(try await fresh.take(timeout: .seconds(10)).text)
            }
            #expect(later == (1...20).map(String.init) && new == later)
            subscriptions.forEach { $0.cancel() }
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aDeliveryWindowHoldsTheRestBackUntilTheHandlerReleasesItsMessages(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            try client.jetStream.ensureStream(.init(name: "LOG", subjects: ["log"], replicas: 1))
            for index in 1...10 { _ = try await client.publish("\(index)", to: "log").get() }
            let window = DeliveryWindow(size: 3)
            let received = Mailbox<NATSMessage>()
            let subscription = try client.jetStream.subscribeOrdered(to: "log", from: .all, loop: client.loop, window: window) { received.put($0) }
            defer {
                window.close()
                subscription.cancel()
            }
            var sequences: [UInt64] = []
            for _ in 0..<3 { sequences.append(try #require(try await received.take(timeout: .seconds(10)).stream?.sequence)) }
            await #expect(throws: Mailbox<NATSMessage>.Timeout.self, "a fourth before any is released") {
                _ = try await received.take(timeout: .milliseconds(500))
            }
            for _ in 0..<7 {
                window.release()
                sequences.append(try #require(try await received.take(timeout: .seconds(10)).stream?.sequence))
            }
            #expect(sequences == Array(1...10), "one more per release, in order")
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aKeyValueBucketKeepsItsHistoryPerKeyAndItsRevisionIsTheStreamSequence(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            try client.jetStream.ensureKeyValueBucket("leases", replicas: 1)
            try client.jetStream.ensureKeyValueBucket("leases", replicas: 1)
            try client.jetStream.ensureKeyValueBucket("jobs", replicas: 1, history: 2, maximumValueSize: 64, maximumBytes: nil)
            let p0 = JetStream.keySubject(bucket: "leases", key: "partition.0")

            let created = try await client.publish("a", to: p0, conditions: .init(expectedLastSequence: 0)).get()
            let renewed = try await client.publish("a2", to: p0, conditions: .init(expectedLastSequence: created.sequence)).get()
            let stolen = await client.publish("b", to: p0, conditions: .init(expectedLastSequence: created.sequence))
            _ = try await client.publish("c", to: JetStream.keySubject(bucket: "leases", key: "member.c")).get()
            _ = try await client.publish("", to: JetStream.keySubject(bucket: "leases", key: "member.d"), headers: ["KV-Operation": "DEL"]).get()
            for value in ["1", "2", "3"] { _ = try await client.publish(value, to: JetStream.keySubject(bucket: "jobs", key: "job.7")).get() }
            let tooLarge = await client.publish(String(repeating: "x", count: 65), to: JetStream.keySubject(bucket: "jobs", key: "job.8"))

            #expect(stolen.failure?.isWrongLastSequence == true)
            let values = try await client.collect(3, from: "$KV.leases.>", start: .lastPerSubject)
            #expect(values.map { "\($0.subject)=\($0.text)" } == ["$KV.leases.partition.0=a2", "$KV.leases.member.c=c", "$KV.leases.member.d="])
            #expect(values.first?.stream?.sequence == renewed.sequence)
            #expect(values.last?.headers["KV-Operation"] == "DEL")
            #expect(try client.jetStream.streamState("KV_leases")?.messages == 3, "history 1: one value per key")
            #expect(try client.jetStream.messageCount(stream: "KV_jobs", subject: "$KV.jobs.job.7") == 2, "history 2")
            #expect(try client.jetStream.lastMessage(stream: "KV_jobs", subject: "$KV.jobs.job.7").map { String(decoding: $0.payload, as: UTF8.self) } == "3")
            #expect(try client.jetStream.lastMessage(stream: "KV_jobs", subject: "$KV.jobs.job.8") == nil)
            #expect(tooLarge.failure != nil && tooLarge.failure?.isTimeout == false, "\(tooLarge)")
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aFullStreamRefusesOrDropsItsOldestAndNoLimitIsSetBelowWhatAStreamHolds(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            let value = String(repeating: "x", count: 1_500)
            // About 1,500 bytes a message as either counts it (a server adds a few dozen): two fit in 4 KiB, three do not.
            try client.jetStream.ensureBoundedStream(.init(name: "LOG", subjects: ["log.>"], replicas: 1, maximumBytes: 4_096))
            try client.jetStream.ensureStream(.init(name: "REJECTED", subjects: ["rejected.>"], replicas: 1, maximumBytes: 4_096,
                                                    whenFull: .dropOldest))
            for _ in 0..<2 { _ = try await client.publish(value, to: "log.p0").get() }
            let refused = await client.publish(value, to: "log.p0")
            for _ in 0..<3 { _ = try await client.publish(value, to: "rejected.p0").get() }
            let logState = try #require(try client.jetStream.streamState("LOG"))
            let rejectedState = try #require(try client.jetStream.streamState("REJECTED"))

            #expect(refused.failure != nil && refused.failure?.isTimeout == false && refused.failure?.isWrongLastSequence == false, "\(refused)")
            #expect(logState.messages == 2 && logState.firstSequence == 1 && logState.lastSequence == 2, "nothing stored was dropped")
            #expect(rejectedState.messages == 2 && rejectedState.firstSequence == 2 && rejectedState.lastSequence == 3, "the oldest went")

            // A limit below what the log holds would refuse every write from then on: refused, naming both figures.
            let lowered = Result { () throws(NATSError) in
                try client.jetStream.ensureBoundedStream(.init(name: "LOG", subjects: ["log.>"], replicas: 1, maximumBytes: 2_048))
            }
            #expect(lowered.failure?.description.contains("holds \(logState.bytes) bytes") == true, "\(lowered)")
            #expect(lowered.failure?.description.contains("2048") == true, "\(lowered)")
            try client.jetStream.ensureBoundedStream(.init(name: "LOG", subjects: ["log.>"], replicas: 1, maximumBytes: 8_192))
            _ = try await client.publish(value, to: "log.p0").get()

            // A bucket made without a limit gets one when it is ensured again with it.
            try client.jetStream.ensureKeyValueBucket("jobs", replicas: 1, maximumValueSize: 4_096)
            for key in 1...3 { _ = try await client.publish(value, to: JetStream.keySubject(bucket: "jobs", key: "k\(key)")).get() }
            try client.jetStream.ensureKeyValueBucket("jobs", replicas: 1, maximumValueSize: 4_096, maximumBytes: 8_192)
            for key in 4...5 { _ = try await client.publish(value, to: JetStream.keySubject(bucket: "jobs", key: "k\(key)")).get() }
            let bucketFull = await client.publish(value, to: JetStream.keySubject(bucket: "jobs", key: "k6"))
            #expect(bucketFull.failure != nil && bucketFull.failure?.isTimeout == false, "\(bucketFull)")
            #expect(try client.jetStream.streamState("KV_jobs")?.messages == 5)
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aPurgeRemovesBelowASequenceOrASubjectAndTheSequencesGoOn(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            try client.jetStream.ensureStream(.init(name: "LOG", subjects: ["log.>"], replicas: 1))
            for index in 1...10 { _ = try await client.publish("\(index)", to: "log.p\(index % 2)").get() }
            let requests = try client.loop.sync { try NATSRequests(connection: client.jetStream.messaging, loop: client.loop) }

            let below = try await client.purge(requests) { $0.purge(stream: "LOG", below: 5, timeout: .seconds(5), completion: $1) }.get()
            let afterBelow = try #require(try client.jetStream.streamState("LOG"))
            let odd = try await client.purge(requests) { $0.purge(stream: "LOG", subject: "log.p1", timeout: .seconds(5), completion: $1) }.get()
            let missing = await client.purge(requests) { $0.purge(stream: "MISSING", below: 1, timeout: .seconds(5), completion: $1) }
            let next = try await client.publish("11", to: "log.p1").get()

            #expect(below == 4)
            #expect(afterBelow.messages == 6 && afterBelow.firstSequence == 5 && afterBelow.lastSequence == 10)
            #expect(odd == 3)
            #expect(missing.failure != nil)
            #expect(next.sequence == 11)
            #expect(try await client.collect(4, from: "log.>", start: .all).map(\.text) == ["6", "8", "10", "11"])
            #expect(try client.jetStream.messageCount(stream: "LOG", subject: "log.p1") == 1)
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aPushConsumerHandsOutOneAtATimeAndDeliversAgainWhatIsNotAcknowledged(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            try client.jetStream.ensureStream(.init(name: "INGEST", subjects: ["ingest.>"], replicas: 1, retention: .workQueue))
            let settings = JetStream.PushConsumerSettings(stream: "INGEST", name: "p0", filterSubject: "ingest.p0", deliverSubject: "deliver.p0",
                                                          group: "owners", maximumAckPending: 1, ackWait: .seconds(4))
            try client.jetStream.ensurePushConsumer(settings)
            try client.jetStream.ensurePushConsumer(settings)
            for index in 1...3 { _ = try await client.publish("\(index)", to: "ingest.p0").get() }
            _ = try await client.publish("other", to: "ingest.p1").get()
            let received = Mailbox<NATSMessage>()
            let member = try client.jetStream.messaging.subscribe(to: "deliver.p0", queue: "owners", loop: client.loop) { received.put($0) }

            let first = try await received.take(timeout: .seconds(10))
            // Nothing more while the first is unacknowledged: the second waits behind it. A test
            // task held up past the acknowledgement wait (a loaded parallel run) sees the first
            // again meanwhile, never the second.
            var unacknowledged = first
            if let more = try? await received.take(timeout: .milliseconds(300)) {
                #expect(more.text == "1", "only the unacknowledged first may come again, not \(more.text)")
                unacknowledged = more
            }
            client.jetStream.deliverAgain(unacknowledged, after: .milliseconds(100))
            let again = try await received.take(timeout: .seconds(10))
            // Not acknowledged: delivered again after the acknowledgement wait. The wait is also
            // how late this test may acknowledge what it took before the consumer hands it out
            // once more: 2 s was missed by a test task held up in a loaded parallel run.
            let afterWait = try await received.take(timeout: .seconds(10))
            client.jetStream.acknowledge(afterWait)
            // A task held up past the wait once more may find the message before handed out
            // again before its acknowledgement landed (seen for the first and for the second):
            // acknowledged as well, it comes no more, and the next one follows.
            func next(after previous: NATSMessage) async throws -> NATSMessage {
                var message = try await received.take(timeout: .seconds(10))
                while message.text == previous.text {
                    client.jetStream.acknowledge(message)
                    message = try await received.take(timeout: .seconds(10))
                }
                client.jetStream.acknowledge(message)
                return message
            }
            let second = try await next(after: afterWait)
            let third = try await next(after: second)
            // The servers take acknowledgements after they were sent.
            var left = try client.jetStream.streamState("INGEST")?.messages
            for _ in 0..<100 where left != 1 {
                try await Task.sleep(for: .milliseconds(50))
                left = try client.jetStream.streamState("INGEST")?.messages
            }

            #expect([first, again, afterWait, second, third].map(\.text) == ["1", "1", "1", "2", "3"])
            #expect(first.subject == "ingest.p0" && first.reply != nil)
            #expect(left == 1, "a work queue forgets what was acknowledged")
            member.cancel()
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func theGatewaysPartitionOfAChannelIsTheOneTheServersMappingChooses(backend: NATSBackend) async throws {
        try await backend.withCluster(mappings: ["in.*": "part.{{partition(64,1)}}.{{wildcard(1)}}"]) { cluster in
            let client = try BackendClient(cluster)
            try client.jetStream.ensureStream(.init(name: "PARTS", subjects: ["part.*.*"], replicas: 1))
            let channels = (0..<300).map { "match-\($0)" } + ["WC2026.FINAL", "league:epl.2026.ars-che", String(repeating: "x", count: 128)]
            for channel in channels {
                _ = try await client.publish(channel, to: "in.\(ChannelPartitioning.subjectToken(channel))").get()
            }
            let stored = try await client.collect(channels.count, from: "part.*.*", start: .all)
            let partitioning = try #require(ChannelPartitioning(count: 64))
            for message in stored {
                let tokens = message.subject.split(separator: ".")
                #expect(Int(tokens[1]) == partitioning.partition(of: message.text), "\(message.subject)")
                #expect(tokens[2] == ChannelPartitioning.subjectToken(message.text))
            }
            #expect(Set(stored.map { $0.subject.split(separator: ".")[1] }).count > 50, "the channels spread over the partitions")
        }
    }

    @Test(arguments: NATSBackend.allCases)
    func aRequestGetsItsAnswerOrNoRespondersOrATimeoutOnItsLoop(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let owner = try BackendClient(cluster, name: "owner")
            let client = try BackendClient(cluster)
            let messaging = owner.jetStream.messaging
            let responder = try messaging.subscribe(to: "owner.p1", queue: "owners", loop: owner.loop) { request in
                guard let reply = request.reply else { return }
                try? messaging.publish(request.payload.reversed(), to: reply)
            }
            let silent = try messaging.subscribe(to: "owner.p2", loop: owner.loop) { _ in }
            // Subscriptions reach the servers before the requests (the real client sends them in order).
            _ = await owner.publish("", to: "nowhere")
            let results = Mailbox<String>()
            let requests = try client.loop.sync { try NATSRequests(connection: client.jetStream.messaging, loop: client.loop) }
            client.loop.execute {
                for (subject, payload) in [("owner.p1", "abc"), ("owner.p9", "x"), ("owner.p2", "y"), ("owner.p1", "123")] {
                    requests.request(Array(payload.utf8), to: subject, timeout: .milliseconds(300)) { result in
                        #expect(client.loop.inEventLoop)
                        switch result {
                        case .success(let answer): results.put("\(subject) answered \(answer.text)")
                        case .failure(let failure): results.put(failure.description)
                        }
                    }
                }
            }
            var seen: Set<String> = []
            for _ in 0..<4 { seen.insert(try await results.take(timeout: .seconds(10))) }
            #expect(seen == ["owner.p1 answered cba", "owner.p1 answered 321", "no responder on owner.p9", "no answer on owner.p2 within 0.3 seconds"])
            #expect(try client.loop.sync { requests.outstanding } == 0)
            responder.cancel()
            silent.cancel()
        }
    }

    /// Abandoning a subject answers every request waiting on it at once, leaves the others, and
    /// an answer that comes later is dropped.
    @Test(arguments: NATSBackend.allCases)
    func abandoningASubjectAnswersItsWaitingRequestsAtOnceAndDropsTheirLateAnswers(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let owner = try BackendClient(cluster, name: "owner")
            let client = try BackendClient(cluster)
            let messaging = owner.jetStream.messaging
            let held = Mailbox<NATSMessage>()
            let stalled = try messaging.subscribe(to: "owner.p3", loop: owner.loop) { held.put($0) }
            let other = try messaging.subscribe(to: "owner.p4", loop: owner.loop) { held.put($0) }
            _ = await owner.publish("", to: "nowhere")
            let results = Mailbox<String>()
            let requests = try client.loop.sync { try NATSRequests(connection: client.jetStream.messaging, loop: client.loop) }
            client.loop.execute {
                for (subject, payload) in [("owner.p3", "a"), ("owner.p3", "b"), ("owner.p4", "c")] {
                    requests.request(Array(payload.utf8), to: subject, timeout: .seconds(30)) { result in
                        switch result {
                        case .success(let answer): results.put("\(subject) answered \(answer.text)")
                        case .failure(let failure): results.put(failure.description)
                        }
                    }
                }
            }
            var asked: [NATSMessage] = []
            for _ in 0..<3 { asked.append(try await held.take(timeout: .seconds(10))) }
            try client.loop.sync { requests.abandon(subject: "owner.p3") }
            #expect([try await results.take(timeout: .seconds(5)), try await results.take(timeout: .seconds(5))]
                    == ["stopped waiting for an answer on owner.p3", "stopped waiting for an answer on owner.p3"])
            #expect(try client.loop.sync { requests.outstanding } == 1)
            // The abandoned requests' answers come too late; the other's is taken.
            for message in asked { try messaging.publish(Array("late \(message.text)".utf8), to: try #require(message.reply)) }
            #expect(try await results.take(timeout: .seconds(5)) == "owner.p4 answered late c")
            _ = await owner.publish("", to: "nowhere")
            #expect(try client.loop.sync { requests.outstanding } == 0)
            stalled.cancel()
            other.cancel()
        }
    }

    /// The probe a starting gateway waits on: answered by the stream that stores the subject,
    /// with nothing stored; a subject nobody stores is still unheard when the wait ends.
    @Test(arguments: NATSBackend.allCases)
    func waitingUntilASubjectIsHeardStoresNothingAndGivesUpOnASubjectNobodyStores(backend: NATSBackend) async throws {
        try await backend.withCluster { cluster in
            let client = try BackendClient(cluster)
            try client.jetStream.ensureKeyValueBucket("jobs", replicas: 1)
            try JetStream.waitUntilHeard(subject: JetStream.keySubject(bucket: "jobs", key: "probe"), jetStream: client.jetStream, loop: client.loop)
            #expect(try client.jetStream.streamState("KV_jobs")?.messages == 0)
            let started = ContinuousClock.now
            #expect(throws: NATSError.self) {
                try JetStream.waitUntilHeard(subject: "nowhere.probe", jetStream: client.jetStream, loop: client.loop, for: .milliseconds(600))
            }
            #expect(ContinuousClock.now - started >= .milliseconds(600), "given up before the limit")
        }
    }
}
