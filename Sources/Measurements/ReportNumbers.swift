import Foundation

/// How reports write numbers (load reports, replay summaries), the same way in the summary, the
/// tables and the charts. Locale-independent, so that a report reads the same on every machine.
public enum ReportNumbers {
    /// A whole number with thousands separators: `135,377`.
    public static func grouped(_ value: Double) -> String {
        guard value.isFinite else { return nonFinite(value) }
        let rounded = value.rounded()
        guard abs(rounded) < 1e18 else { return String(format: "%.3g", value) }
        let digits = String(Int64(abs(rounded)))
        var result = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return rounded < 0 ? "-" + result : result
    }

    /// A fixed number of decimals: `0.91`, `12.50`.
    public static func fixed(_ value: Double, decimals: Int = 2) -> String {
        guard value.isFinite else { return nonFinite(value) }
        return String(format: "%.\(decimals)f", value)
    }

    /// A rate or count of any size: grouped whole numbers from 100 up, two decimals below.
    public static func figure(_ value: Double) -> String {
        abs(value) >= 100 ? grouped(value) : fixed(value)
    }

    /// Bytes as megabytes (10^6 bytes) with one decimal: `125.3`.
    public static func megabytes(_ bytes: Int) -> String {
        fixed(Double(bytes) / 1_000_000, decimals: 1)
    }

    private static func nonFinite(_ value: Double) -> String {
        value.isNaN ? "n/a" : (value > 0 ? "∞" : "-∞")
    }
}
