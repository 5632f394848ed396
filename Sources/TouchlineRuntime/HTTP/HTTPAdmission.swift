/// What an ``HTTPServerConfiguration/admission`` hook decides about a complete request head,
/// before any byte of its body is read.
public enum HTTPAdmission: Sendable, Equatable {
    /// Admitted. Its body counts against the share of `bodyOwner` in the body budget (the
    /// gateway: the API key's index), or only against the total when nil.
    case admit(bodyOwner: Int?)
    /// Answered with this error; the handler never sees the request and its body is never held.
    case refuse(HTTPError)
}
