import TouchlineCore

extension ClusterSimulation {
    /// What reached the servers and APNs, with the gateway and the fence of every push, and the
    /// invariants over them; each check returns the problems it found.
    struct APNsRecord {
        /// Per channel, the events its provider heard acknowledged.
        private var acknowledged: [Set<Int>]
        /// Per channel, the last state that reached APNs, with its sender.
        private var lastState: [(seq: Int, sender: String, fence: Fence)?]
        /// Per partition, the highest fence a push reached APNs under, with its sender.
        private var highestFence: [(fence: Fence, sender: String)?]
        /// States that reached APNs, each with the fence it was sent under.
        private var statesUnderFence: Set<StateUnderFence> = []
        /// Per partition, the highest fence of a stored takeover record.
        private var highestTakeover: [Fence?]
        /// Per partition, the position of its slice's stored save.
        private var savedPosition: [Int]
        /// Per partition, how many times each token reached APNs.
        private var tokenArrivals: [[Int]]
        let tokensPerSlice: Int

        private struct StateUnderFence: Hashable {
            let channel: Int
            let seq: Int
            let fence: Fence
        }

        init(channels: Int, partitions: Int, tokensPerSlice: Int) {
            acknowledged = Array(repeating: [], count: channels)
            lastState = Array(repeating: nil, count: channels)
            highestFence = Array(repeating: nil, count: partitions)
            highestTakeover = Array(repeating: nil, count: partitions)
            savedPosition = Array(repeating: 0, count: partitions)
            tokenArrivals = Array(repeating: Array(repeating: 0, count: tokensPerSlice + 1), count: partitions)
            self.tokensPerSlice = tokensPerSlice
        }

        mutating func acknowledged(channel: Int, seq: Int) { acknowledged[channel].insert(seq) }

        /// A write stored in `partition`'s log: none under a fence older than a takeover record before it.
        mutating func stored(_ publish: Publish, in partition: Int) -> [String] {
            var problems: [String] = []
            if let takeover = highestTakeover[partition], publish.fence < takeover {
                problems.append("partition \(partition): a write under \(publish.fence) was stored after the takeover record of \(takeover)")
            }
            if let takeover = publish.takeover { highestTakeover[partition] = max(highestTakeover[partition] ?? takeover, takeover) }
            return problems
        }

        /// A slice's save stored: checkpoints only move forward.
        mutating func saved(_ position: Int, of partition: Int) -> [String] {
            defer { savedPosition[partition] = position }
            guard position < savedPosition[partition] else { return [] }
            return ["partition \(partition): the slice's checkpoint went back from \(savedPosition[partition]) to \(position)"]
        }

        /// A push reached APNs: no state back in time, no fence older than one before it in its
        /// partition, no state twice under one fence.
        mutating func arrives(_ push: Push, from sender: String) -> [String] {
            var problems: [String] = []
            if let highest = highestFence[push.partition], push.fence < highest.fence {
                problems.append("partition \(push.partition): \(sender) pushed under \(push.fence) after \(highest.sender) pushed under \(highest.fence)")
            }
            if highestFence[push.partition].map({ $0.fence <= push.fence }) ?? true { highestFence[push.partition] = (push.fence, sender) }
            switch push.kind {
            case .state(let channel, let seq):
                if let last = lastState[channel], seq < last.seq {
                    problems.append("channel \(channel): \(sender) (\(push.fence)) pushed state \(seq) after \(last.sender) (\(last.fence)) pushed \(last.seq)")
                }
                if !statesUnderFence.insert(StateUnderFence(channel: channel, seq: seq, fence: push.fence)).inserted {
                    problems.append("channel \(channel): state \(seq) pushed twice under \(push.fence)")
                }
                lastState[channel] = (seq, sender, push.fence)
            case .token(_, let token):
                tokenArrivals[push.partition][token] += 1
            }
            return problems
        }

        func timesSent(token: Int, of partition: Int) -> Int { tokenArrivals[partition][token] }

        /// Once the cluster settled: every acknowledged event of `partition`'s channels stored
        /// (`stored`, per channel) and the newest stored state pushed last; every token of its
        /// slice at APNs and the slice saved to its end.
        func problemsAtTheEnd(stored: [Int: Set<Int>], channels: [Int], partition: Int) -> [String] {
            var problems: [String] = []
            for channel in channels {
                let events = stored[channel] ?? []
                if let missing = acknowledged[channel].subtracting(events).min() {
                    problems.append("channel \(channel): event \(missing) was acknowledged and is not in the log")
                }
                let newest = events.max() ?? 0
                if lastState[channel]?.seq != newest {
                    problems.append("channel \(channel): the log's newest state is \(newest), APNs' last is \(lastState[channel].map { String($0.seq) } ?? "none")")
                }
            }
            if let missing = (1...max(1, tokensPerSlice)).first(where: { tokenArrivals[partition][$0] == 0 }), tokensPerSlice > 0 {
                problems.append("partition \(partition): token \(missing) of its slice never reached APNs")
            }
            if savedPosition[partition] != tokensPerSlice {
                problems.append("partition \(partition): the slice is saved at \(savedPosition[partition]) of \(tokensPerSlice)")
            }
            return problems
        }
    }
}
