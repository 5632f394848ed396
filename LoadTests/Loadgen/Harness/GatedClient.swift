import Foundation
import TouchlineCore

/// A provider's connection to a gateway that may be killed at any moment: each request passes a
/// ``RequestGate``, the connection is made again whenever the last one died (or sat idle long
/// enough for the gateway to close it), and a request never throws: it is answered, or lost,
/// and a lost one says whether a kill explains it. Used by one thread only.
final class GatedClient {
    enum Answer {
        /// The gateway answered; `milliseconds` from writing the request to the whole answer.
        case answered(HTTPLoadClient.Response, milliseconds: Double)
        /// No answer: the connection failed or closed. `killed`: the gateway was killed meanwhile.
        case lost(killed: Bool, reason: String)
    }

    private let target: GatewayTarget
    private let gate: RequestGate
    private let idleLimit: Double
    private let timeout: Double
    private var client: HTTPLoadClient?
    private var lastUsed: Int64 = 0
    private var connectedAt: Int64 = 0
    /// The gate's generation when the connection was made: one made before a kill dies with it.
    private var connectionGeneration = 0
    private var requestsOnConnection = 0
    private var previousAnswer = "none"

    /// - Parameters:
    ///   - idleLimit: seconds after which an unused connection is made again before a request
    ///     (below the gateway's idle timeout, which closes it without a word).
    ///   - timeout: seconds an answer may take before the request counts as lost.
    init(target: GatewayTarget, gate: RequestGate, idleLimit: Double, timeout: Double = 30) {
        (self.target, self.gate, self.idleLimit, self.timeout) = (target, gate, idleLimit, timeout)
    }

    func send(_ method: String, _ path: String, body: [UInt8] = []) -> Answer {
        let generation = gate.enter()
        defer { gate.leave() }
        do {
            let now = monotonicNanoseconds()
            if client == nil || Double(now - lastUsed) / 1e9 > idleLimit {
                client = nil
                client = try HTTPLoadClient(host: target.host, port: target.port, apiKey: target.adminKey, timeout: timeout)
                (connectedAt, lastUsed, requestsOnConnection, connectionGeneration) = (now, now, 0, generation)
            }
            let started = monotonicNanoseconds()
            requestsOnConnection += 1
            let response = try client!.send(method, path, body: body)
            lastUsed = monotonicNanoseconds()
            previousAnswer = "\(response.status)\(response.errorCode.map { " " + $0 } ?? "")\(response.closesConnection ? " with Connection: close" : "")"
            // The gateway's last answer on this connection: the next request needs a new one.
            if response.closesConnection { client = nil }
            return .answered(response, milliseconds: Double(lastUsed - started) / 1e6)
        } catch {
            let now = monotonicNanoseconds()
            let connection = client == nil ? "connecting"
                : String(format: "request %d of a connection made %.2f s before; %.2f s since the previous answer, ",
                         requestsOnConnection, Double(now - connectedAt) / 1e9, Double(now - lastUsed) / 1e9) + previousAnswer
            let madeBefore = client == nil ? generation : connectionGeneration
            client = nil
            return .lost(killed: gate.isKillCasualty(startedIn: madeBefore), reason: "\(error) (\(connection))")
        }
    }
}

extension HTTPLoadClient.Response {
    /// The `error` code of a refusal (`store_unavailable`, `reconciling`...), if the body has one.
    var errorCode: String? {
        guard let reply = try? JSONParser.parse(body), case .string(let code)? = reply[member: "error"] else { return nil }
        return code
    }

    /// The body as JSON, if it is.
    var json: JSONValue? { try? JSONParser.parse(body) }
}

extension JSONValue {
    /// A member that is a string, or one that is an integer.
    func string(_ name: String) -> String? { if case .string(let value)? = self[member: name] { value } else { nil } }
    func integer(_ name: String) -> Int64? { if case .integer(let value)? = self[member: name] { value } else { nil } }
}
