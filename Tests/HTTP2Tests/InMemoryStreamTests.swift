import CNGHTTP2
@testable import HTTP2
import Testing
import TouchlineCore
import TouchlineRuntime

/// Streams on a real client connection against an in-memory nghttp2 server: the stream-limit
/// ramp, queueing, header lists, REFUSED_STREAM and other resets. The server counts what the
/// client put on the wire; the client's own accounting is checked through its peak in-flight
/// count (nghttp2 would hold back excess HEADERS by itself, hiding an overrun from the server).
@Suite("Client streams in memory")
struct InMemoryStreamTests {
    private let port = 8443

    @Test func apnsStyleRampFromOneStreamToMany() {
        let link = InMemoryConnection(server: InMemoryServer(maxConcurrentStreams: 1))
        let requests = TestRequests.posts(30, port: port)
        link.send(requests)
        link.connect()
        #expect(link.server.waiting.count == 1, "only one stream may open before the first response")
        #expect(link.stats.inFlight == 1 && link.stats.queued == 29)
        #expect(link.stats.remoteMaxConcurrentStreams == 1)

        link.server.respondToAll()
        link.server.setMaxConcurrentStreams(10)
        link.pump()
        #expect(link.server.waiting.count == 10, "the raised limit is filled at once")
        link.serveAll()

        #expect(link.pending == 0 && link.duplicateCompletions == 0)
        for (index, result) in link.results.enumerated() {
            #expect((try? result?.get())?.body == requests[index].body, "response \(index) carries another request's body")
        }
        #expect(link.server.stats.peakOpenByLimit == [1: 1, 10: 10])
        #expect(link.server.stats.limitViolations == 0 && link.server.stats.invalidFrames == 0)
        #expect(link.stats.peakInFlight == 10)
        #expect(link.stats.remoteMaxConcurrentStreams == 10)
        #expect(link.stats.completed == 30)
        #expect(link.state == .ready)
    }

    @Test func loweredLimitIsHonoured() {
        let link = InMemoryConnection(server: InMemoryServer(maxConcurrentStreams: 20))
        link.connect()
        link.send(TestRequests.posts(60, port: port))
        #expect(link.server.waiting.count == 20)

        link.server.setMaxConcurrentStreams(3)
        link.server.respondToAll()
        link.pump()
        #expect(link.server.waiting.count == 3, "no stream may open while 3 or more are open")
        link.serveAll()

        #expect(link.successes.count == 60)
        #expect(link.server.stats.peakOpenByLimit == [20: 20, 3: 3])
        #expect(link.server.stats.limitViolations == 0 && link.server.stats.invalidFrames == 0)
        #expect(link.stats.peakInFlight == 20)
        #expect(link.stats.remoteMaxConcurrentStreams == 3)
    }

    /// With a limit of 100 the client queues 900 requests; with 1,000 all are on the wire at once.
    @Test(arguments: [100, 1_000] as [UInt32])
    func thousandConcurrentRequestsCompleteExactlyOnce(serverStreamLimit: UInt32) {
        let link = InMemoryConnection(server: InMemoryServer(maxConcurrentStreams: serverStreamLimit))
        let requests = TestRequests.posts(1_000, port: port)
        link.send(requests)
        link.connect()
        #expect(link.server.waiting.count == Int(serverStreamLimit))
        link.serveAll()

        #expect(link.pending == 0 && link.duplicateCompletions == 0)
        #expect(link.results.indices.allSatisfy { (try? link.results[$0]?.get())?.body == requests[$0].body })
        #expect(link.stats.inFlight == 0 && link.stats.queued == 0)
        #expect(link.stats.completed == 1_000)
        #expect(link.stats.peakInFlight == Int(serverStreamLimit))
        #expect(link.server.stats.limitViolations == 0)
    }

    @Test func queueBeyondItsBoundFailsWithQueueFull() {
        var configuration = HTTP2ConnectionConfiguration(host: "127.0.0.1", port: port)
        configuration.maxQueuedRequests = 10
        let link = InMemoryConnection(configuration: configuration, server: InMemoryServer(maxConcurrentStreams: 2))
        link.connect()

        link.send(TestRequests.posts(50, port: port))
        #expect(link.failures.count == 38, "2 streams in flight plus 10 queued; the rest fail at once")
        #expect(link.failures.allSatisfy { if case .queueFull = $0 { true } else { false } })
        link.serveAll()

        #expect(link.successes.count == 12)
        #expect(link.results.prefix(12).allSatisfy { (try? $0?.get()) != nil }, "the first requests keep their places")
    }

    @Test func headerListCarriesPseudoTemplateAndDynamicHeaders() {
        let link = InMemoryConnection()
        link.connect()
        // More templates than the connection caches, up to 41 fixed headers, GET and POST, 0 to 6
        // dynamic headers, paths up to 5 KB: the scratch list and arena must grow.
        let templates = (0..<80).map { index in
            HeaderTemplate(method: index % 3 == 0 ? .get : .post, authority: "127.0.0.1:\(port)",
                           headers: [HTTP2Header("apns-topic", "com.example.app\(index)"), HTTP2Header("apns-push-type", "liveactivity")]
                               + (0..<(index % 40)).map { HTTP2Header("x-fixed-\($0)", "value \($0)") })
        }
        let requests = (0..<200).map { index -> HTTP2Request in
            var headers = DynamicHeaders()
            for field in 0..<(index % (DynamicHeaders.capacity + 1)) {
                if field % 2 == 0 {
                    headers.add("apns-expiration", String(repeating: "\(field)", count: index % 40 + 1), indexed: true)
                } else {
                    headers.add("apns-request-id", "request-\(index)-\(field)")
                }
            }
            let template = templates[index % templates.count]
            return HTTP2Request(template: template, path: "/3/device/\(String(repeating: "ab", count: index * 13))", headers: headers,
                                body: template.method == .post ? TestRequests.body(index) : [])
        }

        link.send(requests)
        link.serveAll()

        #expect(link.pending == 0)
        for (index, result) in link.results.enumerated() {
            guard let response = try? result?.get() else {
                Issue.record("request \(index) failed: \(String(describing: result))")
                continue
            }
            let request = requests[index]
            #expect(response.header("x-request-path") == request.path)
            #expect(response.header("x-request-method") == request.template.method.rawValue)
            #expect(response.header("x-echo-apns-topic") == request.template.headers[0].value)
            #expect(response.header("x-echo-apns-push-type") == "liveactivity")
            #expect(response.headers.filter { $0.name.hasPrefix("x-echo-x-fixed-") }.count == request.template.headers.count - 2)
            let dynamic = (0..<request.headers.count).map { request.headers[$0] }
            for name in ["apns-expiration", "apns-request-id"] {
                let echoed = response.headers.filter { $0.name == "x-echo-\(name)" }.map(\.value)
                #expect(echoed == dynamic.filter { $0.name.description == name }.map(\.value))
            }
            // HPACK: per-request values go out as never-indexed literals, everything else may be indexed.
            let neverIndexed = response.header("x-never-indexed")?.split(separator: ",").map(String.init) ?? []
            #expect(neverIndexed == dynamic.filter { !$0.indexed }.map(\.name.description))
            #expect(response.body == (request.body.isEmpty ? Array(TestPKI.helloBody.utf8) : request.body))
        }
    }

    // MARK: Resets

    @Test func refusedStreamsAreHandedBackWithTheirReason() {
        let owner = RecordingOwner()
        let link = InMemoryConnection(delegate: owner)
        link.connect()
        link.send(TestRequests.posts(4, port: port))

        for streamID in [1, 5] as [Int32] { link.server.reset(streamID, code: NGHTTP2_REFUSED_STREAM.rawValue) }
        link.serveAll()

        #expect(owner.handedBack.map(\.path) == ["/echo/0", "/echo/2"])
        #expect(owner.handedBack.allSatisfy { if case .refusedStream = $0.reason { true } else { false } })
        #expect(link.successes.count == 2)
        #expect(link.state == .ready, "a refused stream does not cost the connection")
    }

    @Test func standaloneConnectionRetriesRefusedStreams() {
        let link = InMemoryConnection()
        link.connect()
        let requests = TestRequests.posts(5, port: port)
        link.send(requests)

        for streamID in [1, 3, 5] as [Int32] { link.server.reset(streamID, code: NGHTTP2_REFUSED_STREAM.rawValue) }
        link.pump()
        #expect(link.server.waiting.map(\.path) == ["/echo/3", "/echo/4", "/echo/0", "/echo/1", "/echo/2"],
                "the refused requests were sent again, after the others")
        link.serveAll()

        for (index, result) in link.results.enumerated() { #expect((try? result?.get())?.body == requests[index].body) }
        #expect(link.server.stats.requestsReceived == 8)
    }

    @Test func endlesslyRefusedStreamsExhaustTheirRetries() {
        var configuration = HTTP2ConnectionConfiguration(host: "127.0.0.1", port: port)
        configuration.maxRefusedRetries = 2
        let link = InMemoryConnection(configuration: configuration)
        link.connect()
        link.send(TestRequests.posts(4, port: port))

        while !link.server.waiting.isEmpty {
            for request in link.server.waiting { link.server.reset(request.streamID, code: NGHTTP2_REFUSED_STREAM.rawValue) }
            link.pump()
        }

        #expect(link.failures.count == 4)
        #expect(link.failures.allSatisfy { if case .retriesExhausted(let last) = $0 { last.contains("REFUSED_STREAM") } else { false } })
        #expect(link.server.stats.requestsReceived == 12, "one try and two retries each")
    }

    @Test func otherStreamResetsFailWithTheirCode() {
        let link = InMemoryConnection()
        link.connect()
        link.send(TestRequests.posts(3, port: port))

        link.server.reset(3, code: NGHTTP2_CANCEL.rawValue)
        link.serveAll()

        guard case .failure(.streamReset(let code)) = link.results[1] else {
            Issue.record("expected a stream reset, got \(String(describing: link.results[1]))")
            return
        }
        #expect(code == NGHTTP2_CANCEL.rawValue)
        #expect(link.successes.count == 2)
    }
}

/// A request's fence, asked as its HEADERS frame and its body are about to be written: the
/// first `holdingAnswers` times it holds, then it does not.
private final class CountedFence: SideEffectFence, @unchecked Sendable {
    private var left: Int
    init(holdingAnswers: Int) { left = holdingAnswers }
    var holds: Bool {
        left -= 1
        return left >= 0
    }
}

@Suite("Client streams in memory: fences")
struct InMemoryFenceTests {
    /// The last moment before a request's bytes leave: a fence that no longer holds when the
    /// HEADERS frame is written cancels it (the server sees nothing of it); the request fails as
    /// `withheld`, once, and the connection goes on with the rest.
    @Test func aRequestWhoseFenceNoLongerHoldsIsWithheldAndTheServerNeverSeesIt() {
        let link = InMemoryConnection(server: InMemoryServer(maxConcurrentStreams: 100))
        link.connect()
        var requests = TestRequests.posts(4, port: 8443)
        requests[0].fence = CountedFence(holdingAnswers: 2)  // as its HEADERS and its body leave
        requests[1].fence = CountedFence(holdingAnswers: 0)
        requests[2].fence = CountedFence(holdingAnswers: 0)
        link.send(requests)
        link.serveAll()

        #expect(link.pending == 0 && link.duplicateCompletions == 0)
        #expect((try? link.results[0]?.get())?.body == requests[0].body)
        for index in [1, 2] {
            guard case .failure(.withheld)? = link.results[index] else {
                Issue.record("request \(index): \(String(describing: link.results[index]))")
                continue
            }
        }
        #expect((try? link.results[3]?.get())?.body == requests[3].body, "a request without a fence is sent")
        #expect(link.server.stats.requestsReceived == 2)
        #expect(link.server.stats.invalidFrames == 0 && link.server.stats.resetsReceived.isEmpty)
        #expect(link.stats.inFlight == 0 && link.state == .ready)
    }

    /// A request is acted on once its body's end arrives. Its HEADERS left while its fence held,
    /// its body waited for the server's flow-control window, and the fence lapsed meanwhile: the
    /// stream is reset instead of finished, the server never has the whole request, and the
    /// request fails as `withheld`. A request without a fence beside it goes through.
    @Test func aRequestWhoseFenceLapsesBeforeItsBodyLeavesIsResetAndTheServerNeverHasItWhole() {
        let server = InMemoryServer(maxConcurrentStreams: 100)
        server.setInitialWindowSize(0)
        let link = InMemoryConnection(server: server)
        link.connect()
        var requests = TestRequests.posts(2, port: 8443)
        let fence = SwitchedFence()
        requests[0].fence = fence
        link.send(requests)
        #expect(link.server.stats.requestsReceived == 0, "HEADERS only: the bodies wait for the window")
        fence.holds = false
        link.server.setInitialWindowSize(65_535)
        link.pump()
        link.serveAll()

        guard case .failure(.withheld)? = link.results[0] else {
            Issue.record("request 0: \(String(describing: link.results[0]))")
            return
        }
        #expect((try? link.results[1]?.get())?.body == requests[1].body)
        #expect(link.server.stats.requestsReceived == 1)
        #expect(link.server.stats.resetsReceived[NGHTTP2_INTERNAL_ERROR.rawValue] == 1, "\(link.server.stats.resetsReceived)")
        #expect(link.pending == 0 && link.duplicateCompletions == 0 && link.state == .ready)
    }
}

/// A fence the test switches off.
private final class SwitchedFence: SideEffectFence, @unchecked Sendable {
    var holds = true
}
