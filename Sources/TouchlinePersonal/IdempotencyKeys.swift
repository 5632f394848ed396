import Foundation
import TouchlineConfiguration
import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// `Idempotency-Key` on the routes that create personal jobs (the IETF httpapi draft "The
/// Idempotency-Key HTTP Header Field"): a retry after a lost 202 gets the first answer again
/// instead of a second fan-out to the whole audience.
///
/// The key, a digest of the request and the answer are committed in the same list as the jobs
/// (``TokenOperation/rememberIdempotencyKey(_:)``), so a 202 and its record are durable together
/// or not at all. A repeat with the same request is answered from the store (same status and
/// body, `Idempotent-Replayed: true`) without creating anything; the same key with another
/// request is 422; a repeat while the first is still being committed is 409. Keys are scoped to
/// the API key (by a digest, never the secret) and the route, and expire after
/// `idempotency.keyLifetimeSeconds`. Without the header a request behaves as before.
///
/// Loop-confined to the ingest loop, like the service that owns it.
package final class IdempotencyKeys: @unchecked Sendable {
    let settings: IdempotencySettings
    /// Keys whose request is in the store's hands: a repeat is refused (409) until it has
    /// committed (then the store answers it) or failed (then it runs like a first request).
    package var inFlight: Set<IdempotencyClaim.Slot> = []

    init(settings: IdempotencySettings) { self.settings = settings }
}

/// A request's hold on its `Idempotency-Key`: where the key is kept and what the request was.
package struct IdempotencyClaim: Sendable {
    package struct Slot: Hashable, Sendable {
        /// The API key's identity (``IdempotencyClaim/scope(of:)``).
        var scope: String
        var route: String
        var key: String
    }

    package var slot: Slot
    /// SHA-256 of the method, target and body.
    package var requestHash: [UInt8]

    /// The record to commit with the request's jobs.
    func record(status: Int, response: JSONValue, at now: UnixTime, lifetime: Duration) -> IdempotencyRecord {
        IdempotencyRecord(scope: slot.scope, route: slot.route, key: slot.key, requestHash: requestHash, status: status,
                          response: response.encoded, createdAt: now, expiresAt: now + lifetime)
    }

    /// The id of the `index`th job a request with this key creates on a cluster: derived from
    /// the key's slot (API key, route, key), so a repeat sent to another gateway names the same
    /// job and finds it in the cluster's job bucket (docs/cluster.md, "Idempotency keys on the
    /// cluster"). Shaped like the random ids (`job-` and a UUID's hex groups).
    func jobID(index: Int) -> String {
        let digest = SHA256.hex(Array("touchline idempotent job\n\(slot.scope)\n\(slot.route)\n\(slot.key)\n\(index)".utf8))
        let hex = Array(digest.prefix(32))
        let groups = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }
        return "job-" + groups.joined(separator: "-")
    }

    /// What stands for an API key in stored records: a digest, so the store never holds a secret.
    static func scope(of key: GatewayConfiguration.APIKey) -> String {
        SHA256.hex(Array("touchline idempotency scope\n".utf8) + Array(key.key.utf8))
    }

    /// The digest a repeat must match: method, target (path and query) and body, byte for byte.
    static func requestHash(of request: HTTPRequest) -> [UInt8] {
        SHA256.digest(Array("\(request.method.rawValue) \(request.head.target)\n".utf8) + request.body)
    }

    /// A repeat's answer: the stored one (`status`, `response`) again if the request is the
    /// same as the first (422 if not).
    package static func replay(status: Int, response: [UInt8], sameRequest: Bool, for claim: IdempotencyClaim) throws(HTTPError) -> HTTPResponse {
        guard sameRequest else {
            throw HTTPError(status: 422, code: "idempotency_key_reused",
                            message: "Idempotency-Key \"\(claim.slot.key)\" was used for a different request to \(claim.slot.route) (another path or body); use a new key for a new request")
        }
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("Idempotent-Replayed", "true")], body: response)
    }

    /// A repeat while the first request is still being answered.
    package static func inUse(_ claim: IdempotencyClaim) -> HTTPError {
        HTTPError(status: 409, code: "idempotency_key_in_use",
                  message: "a request with Idempotency-Key \"\(claim.slot.key)\" is still being processed; retry once it has been answered",
                  headers: [("Retry-After", "1")])
    }

    static let headerName = "Idempotency-Key"
    static let maximumLength = 255

    /// The client's key from the request's `Idempotency-Key` fields; nil without one. The draft
    /// makes the value a Structured Field string (`"8e03978e-..."`); a bare value is taken as
    /// well. The key must be 1 to 255 printable ASCII characters, and one field only: 400
    /// `invalid_idempotency_key` otherwise (never echoing the value).
    static func clientKey(in fields: [HTTPHeaderField]) throws(HTTPError) -> String? {
        let values = fields.filter { $0.name.lowercased() == headerName.lowercased() }.map(\.value)
        guard let value = values.first else { return nil }
        func invalid(_ problem: String) -> HTTPError {
            HTTPError(status: 400, code: "invalid_idempotency_key", message: "header '\(headerName)' \(problem)")
        }
        guard values.count == 1 else { throw invalid("is given \(values.count) times; send it once") }
        var bytes = Array(value.utf8)
        if bytes.first == UInt8(ascii: "\"") {
            guard bytes.count >= 2, bytes.last == UInt8(ascii: "\"") else { throw invalid("opens a quoted string it does not close") }
            var unquoted: [UInt8] = []
            var escaped = false
            for byte in bytes.dropFirst().dropLast() {
                if escaped {
                    guard byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
                        throw invalid("has a backslash before something other than '\"' or '\\' in its quoted string")
                    }
                    unquoted.append(byte)
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else {
                    guard byte != UInt8(ascii: "\"") else { throw invalid("has an unescaped '\"' inside its quoted string") }
                    unquoted.append(byte)
                }
            }
            guard !escaped else { throw invalid("ends its quoted string with a lone backslash") }
            bytes = unquoted
        }
        guard !bytes.isEmpty else { throw invalid("must not be empty") }
        guard bytes.count <= maximumLength else { throw invalid("must be at most \(maximumLength) characters, got \(bytes.count)") }
        guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw invalid("must hold printable ASCII characters only (no control characters, no bytes beyond ASCII)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
