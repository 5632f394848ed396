import Foundation
@testable import NATS
import NATSServers
import Testing
import TestSlots

/// The version check at start: what a server's greeting says, and a server too old refused with
/// its URL, its version and the oldest supported one.
@Suite("NATS server versions")
struct NATSServerVersionTests {
    @Test func versionsParseAndOrderAsReleases() {
        #expect(NATSServerVersion("2.15.1") == NATSServerVersion(major: 2, minor: 15, patch: 1))
        #expect(NATSServerVersion("v2.9.10") == NATSServerVersion(major: 2, minor: 9, patch: 10))
        #expect(NATSServerVersion("2.12.0-RC.1") == NATSServerVersion(major: 2, minor: 12, patch: 0))
        for bad in ["", "2.15", "2.x.1", "2.15.1.4", "-1.2.3"] { #expect(NATSServerVersion(bad) == nil, "\(bad)") }
        #expect(NATSServerVersion("2.9.10")! < NATSServerVersion.oldestSupported)
        #expect(NATSServerVersion("2.10.29")! < NATSServerVersion.oldestSupported)
        #expect(NATSServerVersion("2.11.0")! >= NATSServerVersion.oldestSupported)
        #expect(NATSServerVersion("2.9.10")! < NATSServerVersion("2.10.0")!)
        let greeting = #"INFO {"server_id":"NA","server_name":"n1","version":"2.15.1","proto":1,"go":"go1.24","host":"0.0.0.0","port":4222}"#
        #expect(NATSServerVersion.fromGreeting(greeting) == NATSServerVersion("2.15.1"))
        #expect(NATSServerVersion.fromGreeting("PING") == nil)
    }

    @Test func serverURLsGiveTheirHostAndPort() {
        #expect(NATSServerVersion.hostAndPort(of: "nats://127.0.0.1:4223")! == ("127.0.0.1", 4223))
        #expect(NATSServerVersion.hostAndPort(of: "tls://user:secret@nats.example:7422")! == ("nats.example", 7422))
        #expect(NATSServerVersion.hostAndPort(of: "nats.example")! == ("nats.example", 4222))
        #expect(NATSServerVersion.hostAndPort(of: "nats://[::1]:4222")! == ("::1", 4222))
        for bad in ["nats://:4222", "nats://host:port", "nats://host:99999", "a:b:c"] {
            #expect(NATSServerVersion.hostAndPort(of: bad) == nil, "\(bad)")
        }
    }

    /// A server greeting with an old version is refused before anything connects; the message
    /// names the server, its version and the oldest supported one. A listener stands in for the
    /// old server (it only greets).
    @Test(.heavy) func aServerOlderThanTheOldestSupportedIsRefusedNamingBoth() async throws {
        let listener = try GreetingServer(version: "2.9.10")
        let url = "nats://127.0.0.1:\(listener.port)"
        let refusal = #expect(throws: NATSError.self) {
            try NATSServerVersion.requireSupported([url], timeout: .seconds(2))
        }
        let text = refusal?.description ?? ""
        #expect(text.contains(url) && text.contains("2.9.10") && text.contains("2.11.0"), "\(text)")
        // A server that does not answer is left to the connection.
        try NATSServerVersion.requireSupported(["nats://127.0.0.1:1"], timeout: .milliseconds(200))
    }

    /// The real server the tests run greets with a supported version.
    @Test(.heavy) func theServerTheTestsRunIsSupported() async throws {
        let cluster = try await NATSCluster.start(size: 1)
        let version = try NATSServerVersion.greeting(of: cluster.urls[0], timeout: .seconds(2))
        #expect(version >= NATSServerVersion.oldestSupported, "\(version): set TOUCHLINE_NATS_SERVER or put a current nats-server on PATH")
        try NATSServerVersion.requireSupported(cluster.urls, timeout: .seconds(2))
        await cluster.stop()
    }
}

/// A TCP listener on loopback that greets each connection as a NATS server of `version` would.
private final class GreetingServer: @unchecked Sendable {
    let port: Int
    private let descriptor: Int32

    init(version: String) throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, length) == 0 && getsockname(listening, $0, &length) == 0 }
        }
        guard bound, listen(listening, 4) == 0 else {
            close(listening)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        descriptor = listening
        port = Int(UInt16(bigEndian: address.sin_port))
        let greeting = Array(#"INFO {"server_id":"OLD","version":"\#(version)","proto":1,"max_payload":1048576}"#.utf8) + [13, 10]
        Thread {
            while true {
                let client = accept(listening, nil, nil)
                guard client >= 0 else { return }
                _ = greeting.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                close(client)
            }
        }.start()
    }

    deinit { shutdown(descriptor, Int32(SHUT_RDWR)); close(descriptor) }
}

/// Start-up against a cluster that is still forming: what it answers meanwhile is tried again
/// within a bound; anything else, and the last answer after the bound, is thrown.
@Suite("JetStream calls at start")
struct JetStreamStartRetryTests {
    static let noPeers = NATSError(status: 1, jetStreamCode: 10005, operation: "create stream LOG", detail: "no suitable peers for placement")
    static let noLeader = NATSError(status: 1, jetStreamCode: 10008, operation: "create stream LOG", detail: "JetStream system temporarily unavailable")

    @Test func aFormingClustersAnswersAreTriedAgainAndOthersThrownAtOnce() throws {
        var answers: [NATSError] = [Self.noPeers, .timeout(operation: "create stream LOG"), Self.noLeader, .noResponders(operation: "create stream LOG")]
        var calls = 0
        let created = try JetStream.retryingWhileForming(for: .seconds(10)) { () throws(NATSError) -> String in
            calls += 1
            if !answers.isEmpty { throw answers.removeFirst() }
            return "created"
        }
        #expect(created == "created" && calls == 5)

        calls = 0
        let refused = #expect(throws: NATSError.self) {
            try JetStream.retryingWhileForming { () throws(NATSError) in
                calls += 1
                throw NATSError.storeRefused("insufficient resources", operation: "create stream LOG")
            }
        }
        #expect(calls == 1 && refused?.jetStreamCode == 10077)

        let started = ContinuousClock.now
        let gaveUp = #expect(throws: NATSError.self) {
            try JetStream.retryingWhileForming(for: .milliseconds(500)) { () throws(NATSError) in throw Self.noPeers }
        }
        #expect(gaveUp?.detail == "no suitable peers for placement" && ContinuousClock.now - started < .seconds(5))
    }

    /// The C client's key-value creation passes the servers' words on without their code: the
    /// words are read for it, so a bucket created while a node joins is tried again too.
    @Test func aKeyValueCreationRefusedForPlacementCountsAsForming() {
        let words = NATSError(status: 1, operation: "create key-value bucket touchline_leases",
                              detail: "(jsm.c:1033): no suitable peers for placement, peer offline")
        #expect(!words.isClusterForming)
        #expect(words.withJetStreamCodeOfItsWords.isClusterForming && words.withJetStreamCodeOfItsWords.jetStreamCode == 10005)
        let other = NATSError(status: 1, operation: "create key-value bucket x", detail: "insufficient resources")
        #expect(other.withJetStreamCodeOfItsWords == other)
    }
}
