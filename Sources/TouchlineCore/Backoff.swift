/// Capped exponential back-off with jitter.
///
/// Used wherever Touchline retries against APNs (reconnects, 5xx, 429): spreading retries in
/// time keeps a fleet of gateways from reconnecting in lock-step, which APNs may treat as abuse.
public struct Backoff: Sendable, Equatable {
    /// Delay before the first retry.
    public var initial: Duration
    /// Upper bound for any single delay.
    public var maximum: Duration
    /// Growth factor between attempts.
    public var multiplier: Double
    /// Fraction of the delay that is randomised: 0 = none, 1 = anywhere in [0, delay].
    public var jitter: Double

    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(30), multiplier: Double = 2, jitter: Double = 0.5) {
        precondition(initial > .zero && maximum >= initial && multiplier >= 1 && (0...1).contains(jitter))
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitter = jitter
    }

    /// The delay before retry number `attempt` (0-based), drawing jitter from `random`.
    public func delay<R: RandomNumberGenerator>(attempt: Int, using random: inout R) -> Duration {
        let base = min(initial.inSeconds * pow(multiplier, Double(max(0, min(attempt, 62)))), maximum.inSeconds)
        let low = base * (1 - jitter)
        let value = jitter == 0 ? base : Double.random(in: low...base, using: &random)
        return .nanoseconds(Int64(value * 1e9))
    }

    /// The delay before retry number `attempt`, with the system random source.
    public func delay(attempt: Int) -> Duration {
        var rng = SystemRandomNumberGenerator()
        return delay(attempt: attempt, using: &rng)
    }

    private func pow(_ x: Double, _ n: Double) -> Double {
        var r = 1.0
        for _ in 0..<Int(n) { r *= x; if r > 1e12 { break } }
        return r
    }
}
