import Foundation
import LoadKit
import Synchronization

/// Slow and abusive clients attached to the gateway for a whole run, each on a thread of its own,
/// connecting again as soon as the gateway cut them (or died): heads trickled a byte every half
/// second (cut with 408 by the head deadline), bodies that stall after their head (408 by the
/// body deadline), and connections that never send anything (closed by the idle deadline).
///
/// They are not held by the ``RequestGate``: they stay attached while the gateway restarts and
/// is checked. A connection that ended because the gateway was killed is counted apart.
final class SlowClients: Sendable {
    enum Kind: String, CaseIterable, Sendable {
        case head = "trickled head"
        case body = "stalled body"
        case idle = "idle connection"
    }

    /// The gateway's `http` deadlines, in seconds.
    struct Deadlines: Sendable {
        var head: Double
        var body: Double
        var idle: Double

        func of(_ kind: Kind) -> Double {
            switch kind {
            case .head: head
            case .body: body
            case .idle: idle
            }
        }
    }

    private let target: GatewayTarget
    private let gate: RequestGate
    private let deadlines: Deadlines
    private let perKind: Int
    private let tolerance: Double
    private let runStart: Int64
    private let path: String
    private let stopped = Atomic(false)
    private let cuts: Mutex<[String: SlowClientCuts]>
    private let finished = DispatchGroup()

    /// - Parameters:
    ///   - perKind: clients of each kind.
    ///   - tolerance: seconds after its deadline by which a cut still counts as on time.
    ///   - runStart: CLOCK_MONOTONIC of the run's start, for the cuts' times.
    ///   - channel: an existing channel the stalled bodies post to (their key and route must be
    ///     valid, or the gateway refuses them from the head alone).
    init(target: GatewayTarget, gate: RequestGate, deadlines: Deadlines, perKind: Int, tolerance: Double, runStart: Int64, channel: String) {
        (self.target, self.gate, self.deadlines, self.perKind, self.tolerance, self.runStart) = (target, gate, deadlines, perKind, tolerance, runStart)
        path = "/v1/channels/\(channel)/events"
        cuts = Mutex(Dictionary(uniqueKeysWithValues: Kind.allCases.map { kind in
            (kind.rawValue, SlowClientCuts(kind: kind.rawValue, deadlineSeconds: deadlines.of(kind), tolerance: tolerance,
                                           expectedStatus: kind == .idle ? nil : 408))
        }))
    }

    func start() {
        for kind in Kind.allCases {
            for _ in 0..<perKind {
                finished.enter()
                Thread { [self] in
                    while !stopped.load(ordering: .relaxed) { attach(kind) }
                    finished.leave()
                }.start()
            }
        }
    }

    /// Stops every client and returns how each kind was dealt with.
    func stop() -> [SlowClientCuts] {
        stopped.store(true, ordering: .relaxed)
        finished.wait()
        return cuts.withLock { cuts in Kind.allCases.map { cuts[$0.rawValue]! } }
    }

    /// Cuts so far, all kinds together (for the figures of each restart).
    var cutsSoFar: Int { cuts.withLock { $0.values.reduce(0) { $0 + $1.cuts.count } } }

    /// One connection of `kind`, from connect to the gateway's cut.
    private func attach(_ kind: Kind) {
        let (generation, down) = gate.state
        guard !down, let socket = try? TCPSocket.connect(host: target.host, port: target.port, receiveTimeout: 0.2) else {
            Thread.sleep(forTimeInterval: 0.2)
            return
        }
        defer { close(socket) }
        let head = Array("POST \(path) HTTP/1.1\r\nHost: \(target.host):\(target.port)\r\n".utf8)
        var trickle: ArraySlice<UInt8> = []
        switch kind {
        case .head: trickle = ArraySlice(head + Array("X-Slow: \(String(repeating: "z", count: 400))".utf8))
        case .body:
            let complete = head + Array("Authorization: Bearer \(target.adminKey)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n".utf8)
            guard (try? TCPSocket.writeAll(socket, complete + Array(#"{"seq":"#.utf8))) != nil else { return }
        case .idle: break
        }
        let started = monotonicNanoseconds()
        let giveUp = started + Int64((deadlines.of(kind) + 3 * tolerance + 2) * 1e9)
        var nextByte = started
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopped.load(ordering: .relaxed) && monotonicNanoseconds() < giveUp {
            if let byte = trickle.first, monotonicNanoseconds() >= nextByte {
                _ = try? TCPSocket.writeAll(socket, [byte])
                trickle = trickle.dropFirst()
                nextByte += 500_000_000
            }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count > 0 { received += buffer[..<count] }
            // An answer, the gateway's close, or a reset: the gateway is done with this client.
            if count >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return record(kind, generation: generation, started: started, status: Self.status(of: received))
            }
        }
        if stopped.load(ordering: .relaxed) { return }
        cuts.withLock { gate.isKillCasualty(startedIn: generation) ? $0[kind.rawValue]!.recordLostToKill() : $0[kind.rawValue]!.recordNeverCut() }
    }

    private func record(_ kind: Kind, generation: Int, started: Int64, status: Int?) {
        let now = monotonicNanoseconds()
        let killed = gate.isKillCasualty(startedIn: generation)
        cuts.withLock { cuts in
            if killed { return cuts[kind.rawValue]!.recordLostToKill() }
            cuts[kind.rawValue]!.record(.init(afterSeconds: Double(now - started) / 1e9, status: status, at: Double(now - runStart) / 1e9))
        }
    }

    /// The status of an HTTP/1.1 answer's first line, if `bytes` hold one.
    private static func status(of bytes: [UInt8]) -> Int? {
        let line = String(decoding: bytes.prefix(64), as: UTF8.self)
        guard line.hasPrefix("HTTP/1.") else { return nil }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }
}
