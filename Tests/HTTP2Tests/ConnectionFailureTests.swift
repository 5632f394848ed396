import Foundation
import HTTP2
import Testing
import TestSlots
import TouchlineCore
import TouchlineRuntime

/// Bad peers and bad addresses: each must give a clear transport error, never a hang.
@Suite("Client connection failures", .serialized, .timeLimit(.minutes(10)), .heavy)
struct ConnectionFailureTests {
    // The time limit only catches a hang: it also counts the wait for a heavy-test slot, which a
    // full parallel run can make minutes long (the 100,000-token cluster test holds three).

    /// Sends one request on a fresh standalone connection and returns the error it failed with.
    private func failure(host: String = "127.0.0.1", port: Int, context: TLSContext? = nil,
                         connectTimeout: Duration = .seconds(5)) async throws -> (HTTP2RequestError, HTTP2ClientConnection.State) {
        let configuration = HTTP2ConnectionConfiguration(host: host, port: port, connectTimeout: connectTimeout)
        let client = try TestClient(configuration: configuration, context: context)
        defer { client.close() }
        let request = HTTP2Request(template: TestRequests.getTemplate(port: port), path: "/hello.txt")
        let outcome = try await sendAll([request], via: client.connection, on: client.loop, timeout: connectTimeout + .seconds(5))
        let error = try #require(outcome.failures.first, "the request unexpectedly succeeded")
        return (error, try client.stats().state)
    }

    @Test func serverWithoutH2InALPNGivesAlpnNotH2() async throws {
        let server = try ServerProcess.opensslServer(alpn: "http/1.1")
        let (error, state) = try await failure(port: server.port)
        #expect(error.transportError == .alpnNotH2(selected: nil))
        #expect(state == .closed)
        #expect("\(error)".contains("HTTP/2"))
    }

    @Test func serverWithoutALPNGivesAlpnNotH2() async throws {
        let server = try ServerProcess.opensslServer(alpn: nil)
        let (error, _) = try await failure(port: server.port)
        #expect(error.transportError == .alpnNotH2(selected: nil))
    }

    @Test func refusedConnectionNamesTheRefusal() async throws {
        let port = try LoopbackSocket.freePort()
        let (error, state) = try await failure(port: port)
        guard case .socket(let reason) = error.transportError else {
            Issue.record("expected a socket error, got \(error)")
            return
        }
        #expect(reason.lowercased().contains("refused"))
        #expect(reason.contains("127.0.0.1:\(port)"))
        #expect(state == .closed)
    }

    @Test func unknownHostFailsWithinTheConnectTimeout() async throws {
        let started = ContinuousClock.now
        let (error, _) = try await failure(host: "no-such-host.invalid", port: 443, connectTimeout: .seconds(3))
        let elapsed = ContinuousClock.now - started
        switch error.transportError {
        case .dns(let host, _):
            #expect(host == "no-such-host.invalid")
        case .timeout(let what):
            // Without a reachable resolver the lookup never answers; the connect timeout must say where it was stuck.
            #expect(what.contains("no-such-host.invalid:443"))
            #expect(what.contains("DNS"))
        default:
            Issue.record("expected a DNS error or a connect timeout, got \(error)")
        }
        #expect(elapsed < .seconds(6), "the failure took \(elapsed)")
    }

    @Test func untrustedCertificateNamesTheVerificationFailure() async throws {
        let server = try ServerProcess.nghttpd()
        let systemTrustOnly = try TLSContext.client()
        let (error, _) = try await failure(port: server.port, context: systemTrustOnly)
        guard case .tls(let reason) = error.transportError else {
            Issue.record("expected a TLS error, got \(error)")
            return
        }
        #expect(reason.contains("certificate verification"))
        #expect(reason.contains("local issuer") || reason.contains("self-signed") || reason.contains("self signed"))
    }

    @Test func certificateForAnotherHostIsRejected() async throws {
        // The certificate names localhost and 127.0.0.1 only; 127.0.0.2 is loopback too on Linux.
        let server = try ServerProcess.nghttpd(address: "0.0.0.0")
        let (error, _) = try await failure(host: "127.0.0.2", port: server.port)
        guard case .tls(let reason) = error.transportError else {
            Issue.record("expected a TLS error, got \(error)")
            return
        }
        #expect(reason.contains("certificate verification"))
        #expect(reason.lowercased().contains("mismatch"))
    }

    @Test func silentServerTimesOutWithinTheConnectTimeout() async throws {
        // Accepts TCP connections and never says a word.
        let loop = EventLoop.start(name: "silent-server")
        defer { loop.stopAndWait() }
        let accepted = AcceptedSockets()
        let listener = try loop.sync { try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { accepted.fds.append($0) } }
        defer { try? loop.sync { listener.close(); accepted.fds.forEach { close($0) } } }

        let (error, state) = try await failure(port: listener.port, connectTimeout: .milliseconds(300))

        guard case .timeout(let what) = error.transportError else {
            Issue.record("expected a timeout, got \(error)")
            return
        }
        #expect(what.contains("127.0.0.1:\(listener.port)"))
        #expect(state == .closed)
    }
}

/// Sockets a test listener accepted, kept open until the test closes them.
private final class AcceptedSockets: @unchecked Sendable {
    var fds: [Int32] = []
}
