import TouchlineCore
import TouchlineRuntime

extension ContentStateLimits {
    /// 422 when `value` is outside the limits; `what` names it in the message. For every route
    /// that takes a content-state or attributes (channels, kickoffs, personal pushes).
    package static func require(_ value: JSONValue, _ what: String) throws(HTTPError) {
        do {
            try check(value)
        } catch {
            throw HTTPError(status: 422, code: "content_state_too_large", message: "\(what) \(error.description)")
        }
    }
}
