import NATS
import TouchlineChannels
import TouchlineCore
import TouchlineRuntime

/// `GET /v1/deadletters` on a cluster. Each gateway keeps the dead letters of the slices it ran
/// in its own file (docs/cluster.md, "Personal jobs on the cluster"), so the gateway asked lists
/// its own and asks every other live gateway for its page (the channel listing's request-reply:
/// each answers with its own route, checking the caller's key too), marks each letter with the
/// gateway that holds it (`gateway`: a replay goes through that gateway, `POST
/// /v1/deadletters/replay` with the same `gateway`), and merges the pages by failure time into
/// one. `after` and `next` are then a ``ClusterCursor`` with a position per gateway. A gateway
/// that does not answer makes the listing 503, never a page with its letters skipped.
extension ClusterNode {
    func listDeadLettersEverywhere(_ request: HTTPRequest) {
        guard let router, let (limit, cursor) = checkedGathering(request, of: "dead letters", badCursor: "invalid_query") else { return }
        let members = liveMembers.contains(settings.instance) ? liveMembers : liveMembers + [settings.instance]
        let gathering = DeadLetterGathering(request: request, cursor: cursor, limit: limit, waiting: members.count)
        for member in members {
            var asked = ForwardedRequest(of: request)
            asked.target = Self.target(of: request, after: cursor[ClusterCursor.member(member)])
            if member == settings.instance {
                router.handle(asked.request(on: ingestLoop) { response in gathering.take(response, from: member) })
            } else {
                requests?.request(asked.encoded, to: memberSubject(member), timeout: Self.listingTimeout) { result in
                    switch result {
                    case .success(let message):
                        guard let response = try? ForwardedResponse(decoding: message.payload).response else {
                            return gathering.fail(HTTPError(status: 502, code: "listing_incomplete",
                                                            message: "gateway \(member) answered the dead-letter listing with unreadable bytes"))
                        }
                        gathering.take(response, from: member)
                    case .failure(let error):
                        gathering.fail(HTTPError(status: 503, code: "listing_incomplete",
                                                 message: "gateway \(member) did not answer the dead-letter listing (\(error)), so its dead letters would be missing; retry",
                                                 headers: [("Retry-After", "1")]))
                    }
                }
            }
        }
    }

    /// The live gateway other than this one that a replay names in `gateway` (nil: this one's,
    /// or a body its own route will refuse).
    func replayGateway(of request: HTTPRequest) -> InstanceID? {
        guard case .string(let name)? = (try? JSONParser.parse(request.body))?[member: "gateway"], let instance = InstanceID(name),
              instance != settings.instance, liveMembers.contains(instance) else { return nil }
        return instance
    }

    /// Hands a replay to the gateway holding its dead letters, after checking the caller here;
    /// that gateway's route checks it again and answers.
    func replayThrough(_ gateway: InstanceID, _ request: HTTPRequest) {
        guard let router else { return }
        do throws(HTTPError) {
            guard case .found(let route, let parameters) = router.resolve(method: request.method, path: request.path) else {
                return router.handle(request)
            }
            _ = try router.authorize(request, for: route, parameters: parameters)
            guard isConnected, let requests else {
                throw HTTPError(status: 503, code: "cluster_unavailable", message: "this gateway has lost its NATS cluster; retry shortly",
                                headers: [("Retry-After", "1")])
            }
            requests.request(ForwardedRequest(of: request).encoded, to: memberSubject(gateway), timeout: Self.forwardTimeout) { result in
                switch result {
                case .success(let message):
                    request.respond((try? ForwardedResponse(decoding: message.payload).response)
                                    ?? HTTPError(status: 502, code: "owner_answer_unreadable", message: "gateway \(gateway) answered the replay with unreadable bytes").response)
                case .failure(let error):
                    request.respond(HTTPError(status: 503, code: "gateway_unavailable",
                                              message: "gateway \(gateway) did not answer the replay (\(error)); it may have acted on it: list its dead letters before trying again",
                                              headers: [("Retry-After", "1")]).response)
                }
            }
        } catch {
            request.respond(error.response)
        }
    }

    /// The request's target for one gateway: its query with `after` that gateway's own position.
    private static func target(of request: HTTPRequest, after position: Int64) -> String {
        let target = request.head.target
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        var items = target.split(separator: "?", maxSplits: 1).dropFirst().first?.split(separator: "&").map(String.init) ?? []
        items.removeAll { $0 == "after" || $0.hasPrefix("after=") }
        if position > 0 { items.append("after=\(position)") }
        return items.isEmpty ? path : path + "?" + items.joined(separator: "&")
    }
}

/// The pages gathered for one dead-letter listing; answers once all are in. Confined to the
/// ingest loop (`@unchecked Sendable` only so the loop's callbacks can capture it).
private final class DeadLetterGathering: @unchecked Sendable {
    private let request: HTTPRequest
    private let cursor: ClusterCursor
    private let limit: Int
    private var waiting: Int
    private var pages: [String: [JSONValue]] = [:]
    /// A gateway had more after its page.
    private var more = false
    private var failure: HTTPResponse?

    init(request: HTTPRequest, cursor: ClusterCursor, limit: Int, waiting: Int) {
        self.request = request
        self.cursor = cursor
        self.limit = limit
        self.waiting = waiting
    }

    /// A gateway's own answer: its page, or its refusal (a bad filter), passed on as it is.
    func take(_ response: HTTPResponse, from member: InstanceID) {
        if response.status == 200, let page = try? JSONParser.parse(response.body), case .array(let letters)? = page[member: "deadLetters"] {
            pages[ClusterCursor.member(member)] = letters.map { letter in
                guard case .object(let members) = letter else { return letter }
                return .object(members + [.init("gateway", .string(member.name))])
            }
            if page[member: "next"] != nil { more = true }
        } else {
            failure = failure ?? (response.status == 200
                ? HTTPError(status: 502, code: "listing_incomplete", message: "gateway \(member) answered the dead-letter listing with something other than a page").response
                : response)
        }
        finish()
    }

    private static func integer(_ letter: JSONValue, _ name: String) -> Int64 {
        if case .integer(let value)? = letter[member: name] { value } else { 0 }
    }

    func fail(_ error: HTTPError) {
        failure = failure ?? error.response
        finish()
    }

    private func finish() {
        waiting -= 1
        guard waiting == 0 else { return }
        if let failure {
            request.respond(failure)
            return
        }
        let (letters, next) = cursor.merging(pages, limit: limit, position: { Self.integer($0, "id") }, time: { Self.integer($0, "failedAt") })
        var members = [JSONValue.Member("deadLetters", .array(letters))]
        if more || letters.count < pages.values.map(\.count).reduce(0, +) { members.append(.init("next", .string(next.text))) }
        request.respond(.json(status: 200, .object(members)))
    }
}
