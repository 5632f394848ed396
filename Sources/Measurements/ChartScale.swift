import Foundation

/// An axis from zero to a round maximum in round steps (1, 2 or 5 times a power of ten), with
/// tick labels as short as the step allows: `0 5 10`, `0 0.2 0.4`, `0 50k 100k`.
///
/// A maximum that is zero, negative or not finite (an empty or all-zero series) gives the axis
/// 0 to 1, so that nothing is ever divided by zero.
struct ChartScale: Equatable {
    let step: Double
    let maximum: Double

    init(covering value: Double, ticks: Int) {
        let value = value.isFinite && value > 0 ? value : 1
        let raw = value / Double(max(1, ticks))
        let magnitude = pow(10, floor(log10(raw)))
        let fraction = raw / magnitude
        let niceFraction: Double = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10
        step = niceFraction * magnitude
        maximum = (value / step - 1e-9).rounded(.up) * step
    }

    var ticks: [Double] {
        (0...Int((maximum / step).rounded())).map { Double($0) * step }
    }

    /// Where `value` lies between 0 (axis start) and 1 (axis end), clamped to that range.
    func fraction(_ value: Double) -> Double {
        Swift.min(1, Swift.max(0, value / maximum))
    }

    /// The label of a tick: `0` at the origin, then as many decimals as the step needs.
    func label(_ value: Double) -> String {
        guard value != 0 else { return "0" }
        let (divisor, suffix): (Double, String) =
            maximum >= 10_000_000 ? (1_000_000, "M") : maximum >= 10_000 ? (1_000, "k") : (1, "")
        let scaledStep = step / divisor
        let decimals = scaledStep >= 1 ? 0 : Int((-log10(scaledStep) - 1e-9).rounded(.up))
        let scaled = value / divisor
        let number = decimals == 0 && suffix.isEmpty
            ? ReportNumbers.grouped(scaled) : ReportNumbers.fixed(scaled, decimals: decimals)
        return number + suffix
    }
}
