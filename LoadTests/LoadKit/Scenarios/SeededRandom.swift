import Foundation

/// A small deterministic random generator (SplitMix64) for scenarios that must be replayable
/// from a seed: the same seed gives the same numbers on every machine and toolchain, which the
/// standard library's generators and its `random(in:using:)` helpers do not promise.
public struct SeededRandom: Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A uniform number in [0, 1), with 53 random bits.
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

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
