import TouchlineAccess
import TouchlineCore
import TouchlineRuntime

/// What a channel is made of, as a channel create gives it (`storagePolicy`, `policy`, `alerts`,
/// `attributes`, `initialState`) and a recorded feed's header repeats it: read and checked the
/// same way in both, each problem a 400 naming the member.
struct ChannelDefinition: Sendable, Equatable {
    var storage: ChannelStorage
    var policy: ChannelPolicy
    var alertMode: AlertMode
    var attributes: MatchAttributes?
    /// The content-state before the first event (a sports channel's is a whole match state).
    var initialState: JSONValue

    /// The rules of a sports channel's events; nil on other channels.
    var sports: SportsChannel? { attributes.map { SportsChannel(attributes: $0, alertMode: alertMode) } }

    init(storage: ChannelStorage, policy: ChannelPolicy, alertMode: AlertMode, attributes: MatchAttributes?, initialState: JSONValue) {
        (self.storage, self.policy, self.alertMode, self.attributes, self.initialState) = (storage, policy, alertMode, attributes, initialState)
    }

    /// Reads the members from `body`; members left out take `defaultPolicy` (over which a given
    /// policy applies), `defaultAlertMode`, and the sport's initial state.
    init(_ body: RequestBody, defaultPolicy: ChannelPolicy, defaultAlertMode: AlertMode) throws(HTTPError) {
        let storageName = try body.required(body.string("storagePolicy"), "storagePolicy")
        guard let storage = ChannelStorage(rawValue: storageName) else {
            throw body.invalid("storagePolicy", "must be \"no-storage\" or \"most-recent\", got \"\(storageName)\"")
        }
        var policy = defaultPolicy
        if let value = try body.object("policy") {
            do { policy = try ChannelPolicy(json: value, base: defaultPolicy) } catch { throw body.invalid("policy.\(error.field)", error.problem) }
        }
        var attributes: MatchAttributes?
        if let value = try body.object("attributes") {
            do { attributes = try MatchAttributes(json: value) } catch {
                throw body.invalid("attributes\(error.field.map { ".\($0)" } ?? "")", "is invalid: \(error.description)")
            }
        }
        var alertMode = defaultAlertMode
        if let value = try body.object("alerts") {
            do { alertMode = try AlertMode(json: value) } catch {
                throw body.invalid("alerts\(error.field.map { ".\($0)" } ?? "")", "is invalid: \(error.description)")
            }
        }
        let sports = attributes.map { SportsChannel(attributes: $0, alertMode: alertMode) }
        var state = try body.object("initialState") ?? sports?.initialState ?? .object([])
        try ContentStateLimits.require(state, "initialState")
        if let sports {
            do { state = try sports.validated(state: state) } catch {
                throw body.invalid("initialState", "is not a \(sports.sport.rawValue) content-state: \(error.description)")
            }
        }
        (self.storage, self.policy, self.alertMode, self.attributes, initialState) = (storage, policy, alertMode, attributes, state)
    }
}
