import APNs
import HTTP2
import Testing
@testable import Touchline
import TouchlineCore
@testable import TouchlinePersonal

/// What the personal queue makes of APNs's answers and of their absence
/// (`PersonalDispatcher.outcome(of:repeatable:)`, table in docs/personal-pushes.md): a send that
/// got no answer may have been delivered, so a push-to-start (not repeatable: a second one starts
/// a second activity) ends `Unconfirmed` instead of being sent again, while an update (repeatable:
/// it shows the same state again) is retried on a new connection as before.
@Suite struct PersonalOutcomeMappingTests {
    private func failure(_ error: HTTP2RequestError) -> Result<APNsResponse, APNsError> {
        .failure(APNsError(transport: error, endpoint: .device, sentID: nil))
    }

    @Test(arguments: [HTTP2RequestError.transport(.closedByPeer), .timedOut(after: .seconds(30)),
                      .goaway(errorCode: 0, reason: "Shutdown"), .streamReset(errorCode: 2)])
    func anUnansweredStartIsUnconfirmedAndAnUnansweredUpdateIsRetried(_ error: HTTP2RequestError) {
        #expect(PersonalDispatcher.outcome(of: failure(error), repeatable: false) == .unconfirmed)
        #expect(PersonalDispatcher.outcome(of: failure(error), repeatable: true) != .unconfirmed)
    }

    @Test func requestsNeverProcessedAreSentAgainWhateverTheirKind() {
        for repeatable in [false, true] {
            #expect(PersonalDispatcher.outcome(of: failure(.retriesExhausted(last: "REFUSED_STREAM")), repeatable: repeatable) == .notProcessed)
            #expect(PersonalDispatcher.outcome(of: failure(.notConnected(.closedByPeer)), repeatable: repeatable) == .notProcessed)
        }
    }

    @Test func answersKeepTheirMeaningForStarts() {
        let unavailable = HTTP2Response(status: 503, body: Array(#"{"reason":"ServiceUnavailable"}"#.utf8))
        let outcome = PersonalDispatcher.outcome(of: .failure(APNsError(rejection: unavailable, endpoint: .device)), repeatable: false)
        #expect(outcome == .retryOnNewConnection, "APNs answered: it did not deliver, so a start is sent again")
        #expect(PersonalDispatcher.outcome(of: .success(APNsResponse(HTTP2Response(status: 200))), repeatable: false) == .accepted)
    }
}
