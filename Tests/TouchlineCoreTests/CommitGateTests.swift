import Testing
import TouchlineCore

/// "202 means stored" and "nothing reaches APNs that is not on disk", for one channel: one
/// write out at a time, requests waiting behind it, engine inputs held until it completes, and
/// a write's pushes released only by its commit.
@Suite("Commit gate")
struct CommitGateTests {
    typealias Gate = CommitGate<String, String>

    /// `gate.pass(input)`, outside `#expect` (which cannot take a mutating call apart).
    private func pass(_ gate: inout Gate, _ input: String) -> Bool {
        gate.pass(input)
    }

    @Test func aRequestWithNoWriteOutIsWrittenAndInputsPass() {
        var gate = Gate()
        #expect(gate.admit("events-1") == .write)
        #expect(pass(&gate, "timer"))
        #expect(!gate.isWriting)
    }

    @Test func whileAWriteIsOutRequestsWaitAndInputsAreHeldInOrder() {
        var gate = Gate()
        #expect(gate.admit("events-1") == .write)
        gate.writeStarted()
        #expect(gate.admit("events-2") == .queued)
        #expect(!pass(&gate, "push-answered-7"))
        #expect(gate.admit("end") == .queued)
        #expect(!pass(&gate, "timer"))
        let completion = gate.writeCompleted(succeeded: true)
        #expect(completion.apply)
        #expect(completion.heldInputs == ["push-answered-7", "timer"])
        #expect(completion.nextRequests == ["events-2", "end"])
        #expect(!gate.isWriting && gate.waiting.isEmpty && gate.held.isEmpty)
    }

    @Test func aFailedWriteReleasesNothingButStillFeedsWhatWasHeld() {
        var gate = Gate()
        gate.writeStarted()
        #expect(!pass(&gate, "push-answered-1"))
        let completion = gate.writeCompleted(succeeded: false)
        // The write's pushes stay unsent and its state unapplied; the engine gets the inputs it
        // would have had, against the state the last commit left.
        #expect(!completion.apply)
        #expect(completion.heldInputs == ["push-answered-1"])
        #expect(pass(&gate, "timer"))
    }

    @Test func atMostSixtyFourRequestsWaitThenTheyAreRefusedAsBusy() {
        var gate = Gate()
        gate.writeStarted()
        for index in 0..<Gate.maximumWaiting { #expect(gate.admit("r\(index)") == .queued) }
        #expect(gate.admit("one too many") == .busy)
        #expect(gate.waiting.count == 64)
        #expect(gate.writeCompleted(succeeded: true).nextRequests.count == 64)
        #expect(gate.admit("after") == .write)
    }
}
