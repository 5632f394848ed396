import Foundation

/// What the mock APNs saw arrive during one measuring period: per endpoint, the answers by
/// status, and per apns-priority the accepted pushes over time and, for pushes carrying the
/// sender's timestamp, their latency over time.
///
/// The mock prints it on SIGUSR1 as one line, `arrival report: {json}`, followed by
/// ``endMarker``; a load generator reads it back with ``init(output:)``. Endpoint names are the
/// mock's (`broadcast`, `device`, `createChannel`...).
public struct ArrivalReport: Sendable, Codable, Equatable {
    /// Pushes to one endpoint with one apns-priority.
    public struct Stream: Sendable, Codable, Equatable {
        /// 10, 5 or 1; nil for endpoints without a priority (channel management).
        public var priority: Int?
        /// Accepted (2xx) requests over time.
        public var arrivals: RateCounter
        /// Arrival minus the sender's timestamp, for accepted pushes carrying it.
        public var latency: LatencyTimeline

        public init(priority: Int?, arrivals: RateCounter, latency: LatencyTimeline) {
            (self.priority, self.arrivals, self.latency) = (priority, arrivals, latency)
        }
    }

    /// Everything about one endpoint.
    public struct Endpoint: Sendable, Codable, Equatable {
        public var name: String
        /// Answers by HTTP status ("200", "410"...), accepted or not.
        public var statuses: [String: Int]
        /// One per priority seen in accepted requests, in ascending priority (nil first).
        public var streams: [Stream]

        public init(name: String, statuses: [String: Int], streams: [Stream]) {
            (self.name, self.statuses, self.streams) = (name, statuses, streams)
        }
    }

    /// Start (Unix ns) and interval of every series in the report.
    public var period: MeasurementPeriod
    /// When the report was taken (Unix ns): the last interval ends here, so it may be partial.
    public var endNanoseconds: Int64
    /// Endpoints with at least one answer, by name.
    public var endpoints: [Endpoint]

    public init(period: MeasurementPeriod, endNanoseconds: Int64, endpoints: [Endpoint]) {
        (self.period, self.endNanoseconds, self.endpoints) = (period, endNanoseconds, endpoints)
    }

    // MARK: - Reading

    /// The endpoint named `name`, if it answered anything.
    public func endpoint(_ name: String) -> Endpoint? {
        endpoints.first { $0.name == name }
    }

    /// Latencies of accepted pushes to `endpoint` with `priority`, or all priorities merged when nil.
    public func latency(endpoint name: String, priority: Int? = nil) -> LatencyHistogram {
        streams(of: name, priority: priority).reduce(into: LatencyHistogram()) { $0.merge($1.latency.histogram) }
    }

    /// Accepted requests to `endpoint` over time, with `priority` or all priorities merged when nil.
    public func arrivals(endpoint name: String, priority: Int? = nil) -> RateCounter {
        streams(of: name, priority: priority).reduce(into: RateCounter(period: period)) { $0.merge($1.arrivals) }
    }

    /// Answers of `endpoint` with `status`.
    public func count(endpoint name: String, status: Int) -> Int {
        endpoint(name)?.statuses[String(status)] ?? 0
    }

    private func streams(of name: String, priority: Int?) -> [Stream] {
        (endpoint(name)?.streams ?? []).filter { priority == nil || $0.priority == priority }
    }

    // MARK: - Printing

    /// The prefix of the report's line.
    public static let linePrefix = "arrival report: "
    /// The line that follows the report, so a reader of the output knows it is complete.
    public static let endMarker = "arrival report end"

    /// `arrival report: {json}`, a newline, then ``endMarker``.
    public var printed: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding plain integers, strings and arrays cannot fail.
        let json = String(decoding: try! encoder.encode(self), as: UTF8.self)
        return Self.linePrefix + json + "\n" + Self.endMarker
    }

    /// Reads the last report line in `output` (what a process printed up to the end marker).
    public init(output: String) throws {
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix(Self.linePrefix) }) else {
            throw ArrivalReportError("no line starting with '\(Self.linePrefix)' in the output")
        }
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(line.dropFirst(Self.linePrefix.count).utf8))
        } catch {
            throw ArrivalReportError("cannot read the arrival report: \(error)")
        }
    }
}

/// An arrival report could not be read; the message says why.
public struct ArrivalReportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
