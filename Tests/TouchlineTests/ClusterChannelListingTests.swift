import Testing
@testable import TouchlineCluster
import TouchlineCore
import TouchlineRuntime
@testable import Touchline

/// The merge of the gateways' pages of `GET /v1/channels` on a cluster.
struct ClusterChannelListingTests {
    static func page(_ ids: [String], next: Bool = false) -> HTTPResponse {
        var members = [JSONValue.Member("channels", .array(ids.map { .object([.init("id", .string($0)), .init("status", .string("active"))]) }))]
        if next, let last = ids.last { members.append(.init("next", .string(last))) }
        return .json(status: 200, .object(members))
    }

    static func ids(_ response: HTTPResponse) throws -> (ids: [String], next: String?) {
        let json = try JSONParser.parse(response.body)
        guard case .array(let channels)? = json[member: "channels"] else { return ([], nil) }
        let ids = channels.compactMap { if case .string(let id)? = $0[member: "id"] { id } else { nil } }
        if case .string(let next)? = json[member: "next"] { return (ids, next) }
        return (ids, nil)
    }

    @Test func theFirstLimitOfTheUnionAreThePageWhateverTheSpread() throws {
        var first = ClusterChannelListing(limit: 3)
        let added = [first.add(Self.page(["m1", "m3", "m5"], next: true)), first.add(Self.page(["m2", "m4"]))]
        #expect(added == [true, true])
        #expect(try Self.ids(first.response) == (["m1", "m2", "m3"], "m3"))
        // The next page, asked of each gateway after m3.
        var second = ClusterChannelListing(limit: 3)
        let addedNext = [second.add(Self.page(["m5", "m7"])), second.add(Self.page(["m4"]))]
        #expect(addedNext == [true, true])
        #expect(try Self.ids(second.response) == (["m4", "m5", "m7"], nil))
    }

    @Test func aGatewayWithMoreKeepsTheCursorGoingAndAMovedChannelComesOnce() throws {
        var listing = ClusterChannelListing(limit: 4)
        let added = [listing.add(Self.page(["a", "b"], next: true)), listing.add(Self.page(["b", "c"]))]
        #expect(added == [true, true])
        #expect(try Self.ids(listing.response) == (["a", "b", "c"], "c"), "a gateway had more after b: the next page goes on from c")
    }

    @Test func anAnswerThatIsNotAPageIsRefused() {
        var listing = ClusterChannelListing(limit: 10)
        let added = [listing.add(HTTPError(status: 401, code: "unauthorized", message: "no").response),
                     listing.add(HTTPResponse(status: 200, body: Array("[]".utf8))),
                     listing.add(.json(status: 200, .object([.init("channels", .array([.object([])]))])))]
        #expect(added == [false, false, false])
    }
}
