/// When a soak run injects its faults: kills of the gateway (`kill -9`) and disk-full episodes,
/// at moments drawn from a seed, so that a run that found something can be repeated exactly.
///
/// The run's seconds are cut into a quiet lead (the load settles before the first fault), one
/// slot per fault, and a tail (load after the last restart, so that work started after it is
/// seen to finish too). Each fault falls at a random moment inside the middle of its slot, so
/// two faults are never closer than a fifth of a slot; which slots hold the disk episodes is
/// drawn from the seed as well.
public struct SoakSchedule: Sendable, Equatable {
    public enum Fault: Sendable, Equatable {
        /// The gateway is killed with SIGKILL and started again on the same data.
        case kill
        /// The data directory's disk is full for this long (then freed).
        case diskFull(seconds: Double)
    }

    /// One fault and when it starts, in seconds from the start of the load.
    public struct Moment: Sendable, Equatable {
        public var at: Double
        public var fault: Fault

        public init(at: Double, fault: Fault) { (self.at, self.fault) = (at, fault) }
    }

    /// The faults in time order.
    public let moments: [Moment]
    public let seconds: Double

    /// - Parameters:
    ///   - seconds: how long the load runs.
    ///   - kills: kills of the gateway.
    ///   - diskEpisodes: disk-full episodes, each `diskSeconds` long.
    public init(seconds: Double, kills: Int, diskEpisodes: Int, diskSeconds: Double, seed: UInt64) throws(SoakScheduleError) {
        guard kills >= 0, diskEpisodes >= 0 else { throw SoakScheduleError("fault counts must not be negative") }
        guard diskSeconds > 0 else { throw SoakScheduleError("a disk episode must last more than 0 s") }
        self.seconds = seconds
        let faults = kills + diskEpisodes
        guard faults > 0 else {
            moments = []
            return
        }
        let lead = max(3, seconds * 0.1), tail = max(5, seconds * 0.15)
        let slot = (seconds - lead - tail) / Double(faults)
        // A kill needs room for the restart; a disk episode must end inside the middle of its slot.
        guard slot >= 2 else {
            throw SoakScheduleError(String(format: "%.0f s leave %.1f s per fault for %d faults; give more seconds or fewer faults",
                                           seconds, max(0, slot), faults))
        }
        if diskEpisodes > 0, slot * 0.8 < diskSeconds + 1 {
            throw SoakScheduleError(String(format: "a disk episode of %.0f s does not fit a slot of %.1f s; give more seconds or fewer faults",
                                           diskSeconds, slot))
        }
        var random = SeededRandom(seed: seed)
        // Which slots hold the disk episodes: a seeded shuffle of the slot numbers.
        var order = Array(0..<faults)
        for index in stride(from: order.count - 1, to: 0, by: -1) {
            order.swapAt(index, random.integer(in: 0...index))
        }
        let diskSlots = Set(order.prefix(diskEpisodes))
        moments = (0..<faults).map { number in
            let start = lead + Double(number) * slot
            if diskSlots.contains(number) {
                return Moment(at: random.uniform(start + slot * 0.1, start + slot * 0.9 - diskSeconds), fault: .diskFull(seconds: diskSeconds))
            }
            return Moment(at: random.uniform(start + slot * 0.1, start + slot * 0.9), fault: .kill)
        }
    }

    /// How many kills the schedule holds.
    public var kills: Int { moments.count { $0.fault == .kill } }
}

/// A schedule that cannot be made from the given options; the message says why.
public struct SoakScheduleError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
