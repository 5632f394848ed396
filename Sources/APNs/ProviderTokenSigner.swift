import TouchlineCore

/// Makes APNs provider tokens: JWTs signed with ES256 by the team's `.p8` key.
///
/// Header `{"alg":"ES256","kid":KEYID}`, claims `{"iss":TEAMID,"iat":SECONDS}`, each base64url
/// without padding; the signature is the raw R || S of an ECDSA P-256 / SHA-256 signature.
/// Signing is cheap (tens of microseconds) but APNs throttles token changes, so tokens are made
/// only by ``ProviderToken``, which caches one for the whole process.
public final class ProviderTokenSigner: Sendable {
    /// The JWT `kid`.
    public let keyID: String
    /// The JWT `iss`.
    public let teamID: String
    private let key: ES256Key
    /// `base64url(header) + "."`: the same for every token of this key.
    private let encodedHeaderAndDot: String

    /// Loads the `.p8` key at `keyFile`.
    public convenience init(keyFile: String, keyID: String, teamID: String) throws(APNsConfigurationError) {
        try Self.validate(keyID: keyID, teamID: teamID)
        try self.init(key: ES256Key(pemFile: keyFile), keyID: keyID, teamID: teamID)
    }

    /// Uses a PEM key already in memory (from a secret store, say); `source` names it in errors.
    public convenience init(pemKey: [UInt8], source: String, keyID: String, teamID: String) throws(APNsConfigurationError) {
        try Self.validate(keyID: keyID, teamID: teamID)
        try self.init(key: ES256Key(pem: pemKey, source: source), keyID: keyID, teamID: teamID)
    }

    private init(key: ES256Key, keyID: String, teamID: String) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        encodedHeaderAndDot = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8)) + "."
    }

    /// A signed JWT whose `iat` is `issuedAt` in whole seconds (without the `bearer ` prefix).
    public func token(issuedAt: UnixTime) throws(APNsConfigurationError) -> String {
        let claims = #"{"iss":"\#(teamID)","iat":\#(issuedAt.seconds)}"#
        let signingInput = encodedHeaderAndDot + Base64URL.encode(Array(claims.utf8))
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Both ids are 10 ASCII letters or digits; that also means they never need JSON escaping.
    private static func validate(keyID: String, teamID: String) throws(APNsConfigurationError) {
        guard isTenAlphanumerics(keyID) else { throw .invalidKeyID(keyID) }
        guard isTenAlphanumerics(teamID) else { throw .invalidTeamID(teamID) }
    }

    private static func isTenAlphanumerics(_ id: String) -> Bool {
        id.utf8.count == 10 && id.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
    }
}
