import NATS
import TouchlineAccess
import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// `GET /v1/channels` on a cluster: every gateway lists the channels of the partitions it
/// serves, so the gateway asked gathers the others' pages over NATS request-reply (each
/// gateway answers on a subject of its own) and merges them with its own
/// (``ClusterChannelListing``). A gateway that does not answer makes the listing 503, never a
/// page with its channels missing.
extension ClusterNode {
    /// How long the gateway asked waits for the others' pages.
    static let listingTimeout: Duration = .seconds(5)

    func memberSubject(_ instance: InstanceID) -> String { "\(settings.prefix).member.\(instance)" }

    /// Lists here first (the route checks the caller and the query), then asks every other live
    /// gateway for the same page and answers with the merge.
    func listEverywhere(_ request: HTTPRequest) {
        guard let router else { return }
        let forwarded = ForwardedRequest(of: request)
        let others = liveMembers.filter { $0 != settings.instance }
        router.handle(forwarded.request(on: ingestLoop) { [self] local in
            guard local.status == 200, !others.isEmpty else {
                request.respond(local)
                return
            }
            guard isConnected, let requests else {
                request.respond(HTTPError(status: 503, code: "cluster_unavailable",
                                          message: "this gateway has lost its NATS cluster, so it cannot list the other gateways' channels; retry shortly",
                                          headers: [("Retry-After", "1")]).response)
                return
            }
            let gathering = ListingGathering(listing: ClusterChannelListing(for: request), waiting: others.count)
            _ = gathering.listing.add(local)
            for member in others {
                requests.request(forwarded.encoded, to: memberSubject(member), timeout: Self.listingTimeout) { result in
                    gathering.take(result, from: member)
                    guard gathering.waiting == 0 else { return }
                    request.respond(gathering.response)
                }
            }
        })
    }

    /// The routes of the listings one gateway asks of the others: each app's channels and the
    /// dead letters.
    static let listings: Set<String> = Set(APIAccess.appRouteBases.map { "\($0)/channels" } + ["/v1/deadletters"])

    /// Another gateway's listing request: answered with this gateway's own page (its router, so
    /// the caller's key is checked here too). Only these come this way: the channel and
    /// dead-letter listings, and replays of this gateway's dead letters (`ClusterNode+DeadLetters.swift`).
    func serveListing(_ message: NATSMessage) {
        guard let reply = message.reply, let router else { return }
        let connection = connection
        let answer: (HTTPResponse) -> Void = { response in try? connection.publish(ForwardedResponse(response).encoded, to: reply) }
        guard let forwarded = try? ForwardedRequest(decoding: message.payload),
              forwarded.method == .get && isListing(forwarded.target, router: router)
                || forwarded.method == .post && forwarded.target == "/v1/deadletters/replay" else {
            return answer(HTTPError(status: 400, code: "forwarded_request_unreadable",
                                    message: "only channel and dead-letter listings and dead-letter replays are asked of a gateway by name").response)
        }
        router.handle(forwarded.request(on: ingestLoop, answer: answer))
    }

    /// Whether `target` (path and query) is a GET of one of ``listings``.
    private func isListing(_ target: String, router: APIRouter) -> Bool {
        let path = String(target.prefix { $0 != "?" })
        guard case .found(let route, _) = router.resolve(method: .get, path: path) else { return false }
        return Self.listings.contains(route.pattern)
    }
}

/// The pages gathered for one listing. Confined to the ingest loop.
private final class ListingGathering {
    var listing: ClusterChannelListing
    var waiting: Int
    var failure: HTTPError?

    init(listing: ClusterChannelListing, waiting: Int) {
        self.listing = listing
        self.waiting = waiting
    }

    func take(_ result: Result<NATSMessage, NATSRequests.Failure>, from member: InstanceID) {
        waiting -= 1
        switch result {
        case .success(let message):
            guard let answer = try? ForwardedResponse(decoding: message.payload).response, listing.add(answer) else {
                failure = failure ?? HTTPError(status: 502, code: "listing_incomplete", message: "gateway \(member) answered the listing with something other than a page")
                return
            }
        case .failure(let error):
            failure = failure ?? HTTPError(status: 503, code: "listing_incomplete",
                                           message: "gateway \(member) did not answer the listing (\(error)), so its channels would be missing; retry",
                                           headers: [("Retry-After", "1")])
        }
    }

    var response: HTTPResponse { failure?.response ?? listing.response }
}
