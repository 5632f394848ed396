/// The request bodies an ``HTTPServer`` holds in memory: all of them together at most
/// ``HTTPConnectionLimits/maxBufferedBodyBytes``, and those of one owner (the gateway: one API
/// key, named by the admission hook) at most ``HTTPConnectionLimits/maxBufferedBodyBytesPerKey``.
///
/// A `Content-Length` is reserved whole when its head is admitted, so one key sending heads of
/// large bodies and no bodies would otherwise hold the whole budget for the body timeout; with a
/// share per owner it holds its share, and the rest stays for the other keys' requests. Pure:
/// the server reports each reservation and release.
public struct HTTPBodyBudget: Sendable {
    public enum Refusal: Sendable, Equatable {
        /// The bodies of every owner together would pass the total.
        case full
        /// The owner's own bodies would pass its share.
        case ownerFull
    }

    public let limit: Int
    public let ownerLimit: Int
    /// Bytes held now, every owner together.
    public private(set) var held = 0
    /// Bytes held now by each owner that holds any.
    public private(set) var heldByOwner: [Int: Int] = [:]

    public init(limit: Int, ownerLimit: Int) {
        self.limit = limit
        self.ownerLimit = ownerLimit
    }

    /// Takes `bytes` for `owner` (nil: a body no owner answers for, held to the total only), or
    /// nothing and the reason. The owner's share is checked first: an owner over it is told so
    /// even when the total is short too.
    public mutating func reserve(_ bytes: Int, owner: Int?) -> Refusal? {
        if let owner, bytes > ownerLimit - heldByOwner[owner, default: 0] { return .ownerFull }
        guard bytes <= limit - held else { return .full }
        held += bytes
        if let owner { heldByOwner[owner, default: 0] += bytes }
        return nil
    }

    /// Gives back `bytes` that `owner` reserved.
    public mutating func release(_ bytes: Int, owner: Int?) {
        guard bytes > 0 else { return }
        held -= bytes
        guard let owner else { return }
        let left = heldByOwner[owner, default: bytes] - bytes
        heldByOwner[owner] = left > 0 ? left : nil
    }
}
