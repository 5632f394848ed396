import Foundation
import TouchlineCore

/// The core's SplitMix64 with the draws a scenario needs, for schedules that must be replayable
/// from a seed: the same seed gives the same numbers on every machine and toolchain, which the
/// standard library's generators and its `random(in:using:)` helpers do not promise.
public struct SeededRandom: Sendable {
    private var generator: SplitMix64

    public init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 { generator.next() }

    /// A uniform number in [0, 1), with 53 random bits.
    public mutating func unit() -> Double { generator.unit() }

    /// A uniform number in [lower, upper).
    public mutating func uniform(_ lower: Double, _ upper: Double) -> Double { lower + (upper - lower) * unit() }

    /// A uniform integer in `range`.
    public mutating func integer(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    /// `true` with probability `probability`.
    public mutating func chance(_ probability: Double) -> Bool { unit() < probability }

    /// A Poisson-distributed count with the given mean (Knuth's method: fine for small means).
    public mutating func poisson(mean: Double) -> Int {
        let limit = Foundation.exp(-mean)
        var count = 0
        var product = unit()
        while product > limit {
            count += 1
            product *= unit()
        }
        return count
    }
}
