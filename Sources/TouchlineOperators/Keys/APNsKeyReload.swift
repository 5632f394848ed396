import APNs
import Foundation
import Synchronization
import TouchlineConfiguration
import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// Rotating the APNs signing key without a restart (docs/operations.md, "Rotating the APNs key"):
/// a team may hold several keys and revoke one, so an operator puts the new `.p8` in place,
/// points `apns.keyPath` and `apns.keyID` at it, and sends `SIGHUP` (or calls
/// `POST /v1/apns/key/reload`). The configuration is read again as at start (file, environment,
/// flags); the key it names is loaded and must sign a token for the same team before it replaces
/// the current one, which otherwise stays. Only the key changes: other settings wait for a restart.
///
/// Thread-safe: a reload reads files and signs once (milliseconds), under a lock so two reloads
/// never interleave.
package final class APNsKeyReload: Sendable {
    /// Where the configuration is read again from (the serve command's sources).
    package typealias ConfigurationSource = @Sendable () throws -> GatewayConfiguration

    /// What a reload did.
    package struct Reloaded: Sendable, Equatable {
        package var keyID: String
        package var teamID: String
        /// False when the configuration names the key in use already (same id and team, same file bytes):
        /// nothing is signed, since APNs refuses tokens changed more often than every 20 minutes.
        package var changed: Bool
    }

    /// Why a reload was refused; the current key stays.
    package struct Refused: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// The app whose key this reloads.
    private let app: String
    private let token: ProviderToken
    private let source: ConfigurationSource?
    /// The key id, its team and the digest of the key file in use.
    private let current: Mutex<(keyID: String, teamID: String, digest: String)>

    package init(app: String, token: ProviderToken, keyFile: String, source: ConfigurationSource?) {
        self.app = app
        self.token = token
        self.source = source
        let digest = (try? Data(contentsOf: URL(fileURLWithPath: keyFile))).map { SHA256.hex(Array($0)) } ?? ""
        current = Mutex((token.keyID, token.teamID, digest))
    }

    /// Reads the configuration again and moves to the key it names, if it is another and usable.
    package func reload() throws(Refused) -> Reloaded {
        guard let source else { throw Refused(description: "this gateway was started without a configuration to read again") }
        let configuration: GatewayConfiguration
        do { configuration = try source() } catch { throw Refused(description: "the configuration cannot be read: \(error)") }
        guard let settings = configuration.credentialedApps.first(where: { $0.name == app })?.apns else {
            throw Refused(description: app == AppChannelID.defaultApp
                ? "the configuration names no APNs key (development mode uses the bundled mock's own key)"
                : "the configuration no longer has the app '\(app)' (apps are added and removed by a restart)")
        }
        let pem: Data
        do { pem = try Data(contentsOf: URL(fileURLWithPath: settings.keyPath)) } catch {
            let member = app == AppChannelID.defaultApp ? "apns.keyPath" : "the keyPath of app '\(app)'"
            throw Refused(description: "\(member) \(settings.keyPath) cannot be read: \(error.localizedDescription)")
        }
        let digest = SHA256.hex(Array(pem))
        return try current.withLock { (current) throws(Refused) -> Reloaded in
            guard (settings.keyID, settings.teamID, digest) != current else { return Reloaded(keyID: settings.keyID, teamID: settings.teamID, changed: false) }
            // The new token goes on new connections only (`APNsConnectionToken`): each APNs
            // loop renews its connections before it signs a request with it.
            do throws(APNsConfigurationError) {
                let signer = try ProviderTokenSigner(pemKey: Array(pem), source: settings.keyPath, keyID: settings.keyID, teamID: settings.teamID)
                try token.check(signer)
                try token.replaceKey(with: signer)
            } catch {
                throw Refused(description: error.description)
            }
            current = (settings.keyID, settings.teamID, digest)
            return Reloaded(keyID: settings.keyID, teamID: settings.teamID, changed: true)
        }
    }
}
