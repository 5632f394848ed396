import TouchlineCore

/// A request format small enough to reason about, for the channel machine's tests and its
/// simulation: a request names its events by `seq` (each sets the state `{"seq": n}`), or ends
/// the channel with the state it has.
struct TestRequest: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case events([Int64])
        case end
    }

    var id: Int
    var kind: Kind
}

/// How each request of a ``TestWrite`` is answered.
enum TestAnswer: Sendable, Equatable {
    /// 202: these events are new.
    case accepted([Int64])
    /// 202: the channel is ending.
    case ended
    /// Refused (a 4xx): nothing of it changed.
    case refused
}

struct TestWrite: ChannelMachineWrite {
    var state: ChannelMachineState
    var acceptedSeqs: [Int64] = []
    var engineActions: [ChannelEngine.Action] = []
    var endedStatus: ChannelStatus?
    var answers: [(request: Int, answer: TestAnswer)] = []

    var isEmpty: Bool { acceptedSeqs.isEmpty && endedStatus == nil }
}

struct TestRules: ChannelMachineRules {
    typealias Request = TestRequest
    typealias Waiter = Int
    typealias Room = Void
    typealias Write = TestWrite

    var followsMatchStatus: Bool { false }

    func write(_ requests: [TestRequest], on state: ChannelMachineState, room: Void, now: UnixTime,
               status: (ChannelEngine) -> ChannelStatus) -> TestWrite {
        var write = TestWrite(state: state)
        for request in requests {
            var next = write.state
            var actions: [ChannelEngine.Action] = []
            var accepted: [Int64] = []
            do {
                switch request.kind {
                case .events(let seqs):
                    for seq in seqs where seq > next.lastSeq {
                        next.contentState = ["seq": .integer(seq)]
                        actions += try next.engine.apply(state: next.contentState, importance: .normal, now: now)
                        next.lastSeq = seq
                        accepted.append(seq)
                    }
                    write.answers.append((request.id, .accepted(accepted)))
                case .end:
                    actions += try next.engine.end(finalState: nil, dismissAt: nil, now: now)
                    write.endedStatus = status(next.engine)
                    write.answers.append((request.id, .ended))
                }
            } catch {
                write.answers.append((request.id, .refused))
                continue
            }
            write.state = next
            write.acceptedSeqs += accepted
            write.engineActions += actions
        }
        return write
    }

    /// The `seq` of the state a push carries (0 for a state without one).
    static func seq(of push: ChannelEngine.OutgoingPush) -> Int64 {
        let text = String(decoding: push.payload, as: UTF8.self)
        guard let range = text.range(of: "\"seq\":") else { return 0 }
        return Int64(text[range.upperBound...].prefix { $0.isNumber }) ?? 0
    }
}

extension ChannelMachine<TestRules>.Action {
    var push: ChannelEngine.OutgoingPush? { if case .send(let push, _, _) = self { push } else { nil } }
    var submitted: TestWrite? { if case .submit(let write, _) = self { write } else { nil } }
    var committed: TestWrite? { if case .answerCommitted(let write) = self { write } else { nil } }
    var failedWrite: TestWrite? { if case .answerFailed(let write) = self { write } else { nil } }
    var refusal: ChannelMachine<TestRules>.RequestRefusal? { if case .refuse(_, let refusal) = self { refusal } else { nil } }
    var rolloverCall: ChannelMachine<TestRules>.RolloverCall? { if case .rollover(let call) = self { call } else { nil } }
    var rolloverSave: ChannelMachine<TestRules>.RolloverSave? { if case .saveRollover(let save) = self { save } else { nil } }
    var armedTimer: (ChannelMachine<TestRules>.Timer, UnixTime)? { if case .arm(let timer, let time) = self { (timer, time) } else { nil } }
    var lifecycleAction: ChannelLifecycle<Int>.Action? { if case .lifecycle(let action) = self { action } else { nil } }
}
