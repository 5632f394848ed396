import APNs
import COpenSSL
import Foundation
import Testing
import TestSlots
import TouchlineCore

/// The ES256 provider token signer. Keys on P-256 are made in process; the tests that run the
/// `openssl` tool (to verify, or to make the other kinds of key) take a heavy slot.
@Suite struct ProviderTokenSignerTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    @Test func headerAndClaimsAreTheExactJSON() throws {
        let signer = try ProviderTokenSigner(keyFile: TestKeys.p256(in: directory), keyID: keyID, teamID: teamID)
        let jwt = try signer.token(issuedAt: UnixTime(seconds: 1_767_290_400))
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(try #require(Base64URLDecoding.decode(parts[0])).text == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(try #require(Base64URLDecoding.decode(parts[1])).text == #"{"iss":"TEAM456789","iat":1767290400}"#)
        #expect(try #require(Base64URLDecoding.decode(parts[2])).count == 64)
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
        #expect(jwt.allSatisfy(alphabet.contains), "base64url without padding")
    }

    @Test func iatIsWholeSeconds() throws {
        let signer = try ProviderTokenSigner(keyFile: TestKeys.p256(in: directory), keyID: keyID, teamID: teamID)
        let jwt = try signer.token(issuedAt: UnixTime(nanoseconds: 1_767_290_400_999_999_999))
        let claims = jwt.split(separator: ".")[1]
        #expect(try #require(Base64URLDecoding.decode(claims)).text == #"{"iss":"TEAM456789","iat":1767290400}"#)
    }

    @Test(.heavy) func signatureVerifiesWithTheOpenSSLTool() throws {
        let keyPath = try TestKeys.p256(in: directory)
        let signer = try ProviderTokenSigner(keyFile: keyPath, keyID: keyID, teamID: teamID)
        let jwt = try signer.token(issuedAt: UnixTime(seconds: 1_767_290_400))
        let signingInput = String(jwt[..<jwt.lastIndex(of: ".")!])
        let raw = try #require(Base64URLDecoding.decode(jwt.split(separator: ".")[2]))
        #expect(try verify(signingInput: signingInput, rawSignature: raw, key: keyPath))
    }

    @Test(.heavy) func aTamperedTokenDoesNotVerify() throws {
        let keyPath = try TestKeys.p256(in: directory)
        let signer = try ProviderTokenSigner(keyFile: keyPath, keyID: keyID, teamID: teamID)
        let jwt = try signer.token(issuedAt: UnixTime(seconds: 1_767_290_400))
        let other = try signer.token(issuedAt: UnixTime(seconds: 1_767_290_401))
        let otherInput = String(other[..<other.lastIndex(of: ".")!])
        let raw = try #require(Base64URLDecoding.decode(jwt.split(separator: ".")[2]))
        #expect(try !verify(signingInput: otherInput, rawSignature: raw, key: keyPath))
    }

    @Test(.heavy) func aTraditionalECPrivateKeyFileOnP256IsAccepted() throws {
        let pkcs8 = try TestKeys.p256(in: directory)
        let sec1 = directory.file("sec1.pem")
        #expect(try openssl(["ec", "-in", pkcs8, "-out", sec1]).status == 0)
        #expect(try String(contentsOfFile: sec1, encoding: .utf8).hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
        let signer = try ProviderTokenSigner(keyFile: sec1, keyID: keyID, teamID: teamID)
        let jwt = try signer.token(issuedAt: UnixTime(seconds: 1))
        let raw = try #require(Base64URLDecoding.decode(jwt.split(separator: ".")[2]))
        #expect(try verify(signingInput: String(jwt[..<jwt.lastIndex(of: ".")!]), rawSignature: raw, key: sec1))
    }

    @Test func aKeyInMemoryWorksLikeAFile() throws {
        let pem = try Array(Data(contentsOf: URL(fileURLWithPath: TestKeys.p256(in: directory))))
        let signer = try ProviderTokenSigner(pemKey: pem, source: "TOUCHLINE_APNS_KEY", keyID: keyID, teamID: teamID)
        #expect(try signer.token(issuedAt: UnixTime(seconds: 1)).split(separator: ".").count == 3)
        #expect(throws: APNsConfigurationError.keyMalformed(path: "TOUCHLINE_APNS_KEY", cause: "no PEM block; expected -----BEGIN PRIVATE KEY-----")) {
            try ProviderTokenSigner(pemKey: [], source: "TOUCHLINE_APNS_KEY", keyID: keyID, teamID: teamID)
        }
    }

    // MARK: - Bad keys and ids

    @Test(.heavy) func aP384KeyIsRejectedNamingTheCurve() throws {
        let path = try TestKeys.p384(in: directory)
        let error = try #require(throws: APNsConfigurationError.self) {
            try ProviderTokenSigner(keyFile: path, keyID: keyID, teamID: teamID)
        }
        #expect(error == .keyNotP256(path: path, found: "EC key on curve secp384r1, 384 bits"))
        #expect(error.description == "key file \(path) is not a P-256 EC key (found EC key on curve secp384r1, 384 bits)")
    }

    @Test(.heavy) func anRSAKeyIsRejectedNamingTheType() throws {
        let path = try TestKeys.rsa(in: directory)
        let error = try #require(throws: APNsConfigurationError.self) {
            try ProviderTokenSigner(keyFile: path, keyID: keyID, teamID: teamID)
        }
        #expect(error.description == "key file \(path) is not a P-256 EC key (found RSA, 2048 bits)")
    }

    @Test func aPEMBlockWithoutAKeyGivesTheFileAndOpenSSLsCause() throws {
        let path = try directory.write("garbage.p8", "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
        let error = try #require(throws: APNsConfigurationError.self) {
            try ProviderTokenSigner(keyFile: path, keyID: keyID, teamID: teamID)
        }
        guard case .keyMalformed(path, let cause) = error else {
            Issue.record("unexpected error \(error)")
            return
        }
        #expect(cause.hasPrefix("the PRIVATE KEY block does not hold a valid key: error:"))
        #expect(error.description.hasPrefix("key file \(path) is not a PEM private key (the PRIVATE KEY block"))
    }

    @Test func aTruncatedKeyIsMalformed() throws {
        let whole = try String(contentsOfFile: TestKeys.p256(in: directory), encoding: .utf8)
        let path = try directory.write("truncated.p8", String(whole.prefix(100)) + "\n-----END PRIVATE KEY-----\n")
        let error = try #require(throws: APNsConfigurationError.self) {
            try ProviderTokenSigner(keyFile: path, keyID: keyID, teamID: teamID)
        }
        guard case .keyMalformed(path, let cause) = error else {
            Issue.record("unexpected error \(error)")
            return
        }
        #expect(!cause.isEmpty)
    }

    @Test func aFileWithoutPEMSaysWhatWasExpected() throws {
        let path = try directory.write("notes.txt", "just some text\n")
        #expect(throws: APNsConfigurationError.keyMalformed(path: path, cause: "no PEM block; expected -----BEGIN PRIVATE KEY-----")) {
            try ProviderTokenSigner(keyFile: path, keyID: keyID, teamID: teamID)
        }
    }

    @Test(.heavy) func aCertificateIsNotAKey() throws {
        let key = try TestKeys.p256(in: directory)
        let certificate = directory.file("cert.pem")
        let result = try openssl(["req", "-new", "-x509", "-key", key, "-subj", "/CN=test", "-days", "1", "-out", certificate])
        #expect(result.status == 0, "\(result.output)")
        #expect(throws: APNsConfigurationError.keyMalformed(path: certificate, cause: "it holds a CERTIFICATE, not a private key")) {
            try ProviderTokenSigner(keyFile: certificate, keyID: keyID, teamID: teamID)
        }
    }

    @Test func aMissingFileSaysSo() throws {
        let path = directory.file("absent.p8")
        #expect(throws: APNsConfigurationError.keyFileUnreadable(path: path, cause: "No such file or directory")) {
            try ProviderTokenSigner(keyFile: path, keyID: keyID, teamID: teamID)
        }
    }

    @Test func aDirectoryIsNotAKeyFile() throws {
        #expect(throws: APNsConfigurationError.keyFileUnreadable(path: directory.path, cause: "Is a directory")) {
            try ProviderTokenSigner(keyFile: directory.path, keyID: keyID, teamID: teamID)
        }
    }

    @Test(.heavy) func aKeyAfterACertificateInTheSameFileIsFound() throws {
        let key = try TestKeys.p256(in: directory)
        let certificate = directory.file("cert.pem")
        #expect(try openssl(["req", "-new", "-x509", "-key", key, "-subj", "/CN=test", "-days", "1", "-out", certificate]).status == 0)
        let bundle = try directory.write("bundle.pem", String(contentsOfFile: certificate, encoding: .utf8) + String(contentsOfFile: key, encoding: .utf8))
        #expect(try ProviderTokenSigner(keyFile: bundle, keyID: keyID, teamID: teamID).token(issuedAt: UnixTime(seconds: 1)).count > 0)
    }

    @Test(.heavy) func anEncryptedKeyIsRejectedWithoutPrompting() throws {
        let plain = try TestKeys.p256(in: directory)
        let encrypted = directory.file("encrypted.p8")
        let result = try openssl(["pkcs8", "-topk8", "-in", plain, "-out", encrypted, "-v2", "aes-256-cbc", "-passout", "pass:secret"])
        #expect(result.status == 0, "\(result.output)")
        #expect(throws: APNsConfigurationError.keyEncrypted(path: encrypted)) {
            try ProviderTokenSigner(keyFile: encrypted, keyID: keyID, teamID: teamID)
        }
    }

    @Test(.heavy) func anEncryptedTraditionalKeyIsRejectedWithoutPrompting() throws {
        let plain = try TestKeys.p256(in: directory)
        let encrypted = directory.file("encrypted-sec1.pem")
        let result = try openssl(["ec", "-in", plain, "-out", encrypted, "-aes256", "-passout", "pass:secret"])
        #expect(result.status == 0, "\(result.output)")
        #expect(throws: APNsConfigurationError.keyEncrypted(path: encrypted)) {
            try ProviderTokenSigner(keyFile: encrypted, keyID: keyID, teamID: teamID)
        }
    }

    @Test(arguments: ["", "ABC123DEF", "ABC123DEFGH", "ABC123DEF-", "ABC123DEFÉ"])
    func keyIDsMustBeTenLettersOrDigits(_ bad: String) throws {
        let path = try TestKeys.p256(in: directory)
        #expect(throws: APNsConfigurationError.invalidKeyID(bad)) {
            try ProviderTokenSigner(keyFile: path, keyID: bad, teamID: teamID)
        }
    }

    @Test func teamIDsMustBeTenLettersOrDigits() throws {
        let path = try TestKeys.p256(in: directory)
        let error = try #require(throws: APNsConfigurationError.self) {
            try ProviderTokenSigner(keyFile: path, keyID: keyID, teamID: "TEAM")
        }
        #expect(error.description == #"team id "TEAM" must be 10 letters or digits (got 4 characters)"#)
    }

    // MARK: - Verification helpers

    /// Converts R || S back to DER with OpenSSL and lets the `openssl dgst` tool check it
    /// against the public key it extracts itself.
    private func verify(signingInput: String, rawSignature: [UInt8], key: String) throws -> Bool {
        let publicKey = directory.file("pub-\(UUID().uuidString).pem")
        #expect(try openssl(["pkey", "-in", key, "-pubout", "-out", publicKey]).status == 0)
        let inputPath = try directory.write("input-\(UUID().uuidString)", signingInput)
        let signaturePath = directory.file("sig-\(UUID().uuidString).der")
        try Data(derSignature(rawSignature)).write(to: URL(fileURLWithPath: signaturePath))
        let result = try openssl(["dgst", "-sha256", "-verify", publicKey, "-signature", signaturePath, inputPath])
        return result.status == 0 && result.output.contains("Verified OK")
    }

    private func derSignature(_ raw: [UInt8]) throws -> [UInt8] {
        try #require(raw.count == 64)
        let signature = try #require(ECDSA_SIG_new())
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, 32, nil)
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        #expect(ECDSA_SIG_set0(signature, r, s) == 1)
        let length = i2d_ECDSA_SIG(signature, nil)
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_ECDSA_SIG(signature, &cursor)
        }
        return der
    }
}
