import TouchlineAccess
import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// `POST /v1/apns/key/reload` (the `default` app) and `POST /v1/apps/{app}/apns/key/reload`
/// (admin keys only): ``APNsKeyReload`` on demand, for deployments where sending the process a
/// signal is awkward (a container platform's exec, a runbook's HTTP call). 200 with the key in
/// use; 422 `key_reload_refused` naming why, the current key kept; 409 `key_reload_unavailable`
/// in development mode (the bundled mock's key); 404 `app_not_found`.
package struct APNsKeyAPI: APIFeature {
    /// Each app's reload, by name (empty in development mode).
    let reloads: [String: APNsKeyReload]
    let log: GatewayLog

    package init(reloads: [String: APNsKeyReload], log: GatewayLog) {
        self.reloads = reloads
        self.log = log
    }

    package func addRoutes(to router: inout APIRouter) {
        for base in APIAccess.appRouteBases {
            router.add(.post, "\(base)/apns/key/reload", scope: .admin(purpose: "APNs key rotations")) { call throws(HTTPError) in
                let app = call.app
                guard let reload = reloads[app] else {
                    throw HTTPError(status: 409, code: "key_reload_unavailable",
                                    message: "this gateway sends to the bundled mock APNs with its own key; there is no APNs key to reload")
                }
                let reloaded: APNsKeyReload.Reloaded
                do throws(APNsKeyReload.Refused) { reloaded = try reload.reload() } catch {
                    log.error("app '\(app)': the APNs key was not reloaded (\(error.description)); the current key stays")
                    throw HTTPError(status: 422, code: "key_reload_refused", message: "the APNs key was not reloaded: \(error.description); the current key stays")
                }
                if reloaded.changed {
                    log.notice("app '\(app)': APNs key \(reloaded.keyID) of team \(reloaded.teamID) signs the provider tokens from now on")
                }
                call.request.respond(.json(status: 200, ["app": .string(app), "keyId": .string(reloaded.keyID), "teamId": .string(reloaded.teamID),
                                                         "changed": .bool(reloaded.changed)]))
            }
        }
    }
}
