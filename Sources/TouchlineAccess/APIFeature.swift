import TouchlineRuntime

/// A part of the provider API (channels, tokens, personal pushes, operators, the dashboard):
/// it owns what its routes need and declares them, with their scopes, in the gateway's table.
package protocol APIFeature {
    func addRoutes(to router: inout APIRouter)
}

extension HTTPRouter where Authorizer == APIAuthorizer {
    /// The gateway's route table: the routes of every feature, authorized with `access`.
    package init(access: APIAccess, features: [any APIFeature]) {
        self.init(authorizer: APIAuthorizer(access: access))
        for feature in features { feature.addRoutes(to: &self) }
    }
}
