import Foundation
import Synchronization
import Testing
import TestSlots
import Touchline
import TouchlineCore
import TouchlineRuntime
import TouchlineTesting

/// Events published straight to the cluster are taken by the channel service's events entry,
/// the one the HTTP route calls: a refused event's record on `touchline.rejected.<channel>`
/// carries the status, error and message the route answers for the same body.
@Suite(.gatewaysInProcess) struct DirectIngestAnswerTests {
    @Test func aRefusedPublishCarriesTheAnswerOfTheHTTPRoute() async throws {
        let ingest = try #require(SubjectMapping(source: "touchline.in.*", destination: "touchline.ingest.{{partition(4,1)}}.{{wildcard(1)}}"))
        let cluster = InMemoryNATSCluster(mappings: [ingest])
        let apns = InMemoryAPNsPair()
        let (gateway, api) = try GatewayBackendChoiceTests.start(on: .inMemoryCluster(cluster), apns: apns)
        let created = try await InMemoryClusterGatewayTests.patiently(api, "POST", "/v1/channels", #"{"id": "match-2", "storagePolicy": "no-storage"}"#)
        #expect(created.status == 201, "\(created.text)")
        let inputs: [(channel: String, body: String)] = [
            ("match-2", #"{"seq": "sixteen", "patch": {}}"#), ("match-2", "not json"), ("match-2", #"{"seq": 1, "patch": 5}"#),
            ("match-2", #"{"seq": 1, "type": "nonsense"}"#), ("no-such-match", #"{"seq": 1, "patch": {"minute": 1}}"#),
        ]
        var answers: [(status: Int64, error: String?, message: String?)] = []
        for input in inputs {
            let answer = try api.request("POST", "/v1/channels/\(input.channel)/events", body: Array(input.body.utf8), key: GatewayFixture.adminKey,
                                         headers: [(name: "Content-Type", value: "application/json")])
            #expect((400..<500).contains(answer.status), "\(input.body): \(answer.text)")
            answers.append((Int64(answer.status), answer.errorCode, answer.json?.string("message")))
        }

        let provider = InMemoryJetStream(cluster.connect(name: "provider"))
        let loop = EventLoop.start(name: "provider")
        defer { loop.stop() }
        let received = Mutex<[JSONValue]>([])
        let subscription = try provider.subscribeOrdered(to: "touchline.rejected.>", from: .all, loop: loop) { message in
            if let record = try? JSONParser.parse(message.payload) { received.withLock { $0.append(record) } }
        }
        defer { subscription.cancel() }
        // One at a time: each refusal is recorded before the next is published.
        for (index, input) in inputs.enumerated() {
            let published = await withCheckedContinuation { done in
                provider.publish(Array(input.body.utf8), to: "touchline.in.\(input.channel)", loop: loop) { done.resume(returning: $0) }
            }
            #expect((try? published.get()) != nil, "\(published)")
            try await eventually("the refusal of \(input.body) recorded", timeout: .seconds(10)) { received.withLock { $0.count } > index }
        }
        let records = received.withLock { $0 }
        for (index, record) in records.enumerated() {
            let http = answers[index]
            #expect(record.string("channel") == inputs[index].channel)
            #expect(record.integer("status") == http.status && record.string("error") == http.error && record.string("message") == http.message,
                    "\(inputs[index].body): published \(record), HTTP \(http)")
        }

        // A subject token names its channel as the route's path segment does: `%XX` decoded.
        let published = await withCheckedContinuation { done in
            provider.publish(Array(#"{"seq": 1, "patch": {"minute": 7}}"#.utf8), to: "touchline.in.match%2D2", loop: loop) { done.resume(returning: $0) }
        }
        #expect((try? published.get()) != nil, "\(published)")
        try await eventually("the event published to match%2D2 applied to match-2", timeout: .seconds(10)) {
            let shown = try? api.request("GET", "/v1/channels/match-2", key: GatewayFixture.adminKey)
            return shown?.json?.integer("lastSeq") == 1
        }
        #expect(received.withLock { $0.count } == inputs.count, "no refusal recorded for the percent-encoded subject")
        await gateway.shutdown()
    }
}
