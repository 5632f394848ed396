import TouchlineCore

/// `touchline replay`: a recorded feed run through the real engine with a policy to try
/// (``FeedReplay``), read as a summary and a chart (docs/replay.md).
public enum Replay {
    public struct Options: Sendable {
        /// Policy members to change from the recorded channel's policy, as the `policy` object of
        /// a channel create takes them (nil: the recorded policy as it is).
        public var policyChanges: [UInt8]?
        /// How long the simulated APNs takes to accept a push.
        public var apnsLatency: Duration
        /// How long the engine keeps running after the last input.
        public var tail: Duration

        public init(policyChanges: [UInt8]? = nil, apnsLatency: Duration = .milliseconds(20), tail: Duration = .seconds(3600)) {
            (self.policyChanges, self.apnsLatency, self.tail) = (policyChanges, apnsLatency, tail)
        }
    }

    /// What a replay shows: the summary's lines and the chart's SVG document.
    public struct Output: Sendable {
        public var summary: String
        public var chart: String
    }

    /// A feed or policy that cannot be replayed; the message names the line or the member.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads `feed` (JSON Lines) and replays it with `options`.
    public static func run(feed: [UInt8], options: Options) throws(Failure) -> Output {
        let recorded: RecordedFeed
        do { recorded = try RecordedFeed(jsonLines: feed) } catch { throw Failure(description: error.description) }
        var policy = recorded.header.channel.policy
        if let changes = options.policyChanges {
            let value: JSONValue
            do { value = try JSONParser.parse(changes) } catch { throw Failure(description: "the policy is not valid JSON: \(error)") }
            guard case .object = value else { throw Failure(description: "the policy must be a JSON object of policy members") }
            do { policy = try ChannelPolicy(json: value, base: policy) } catch {
                throw Failure(description: "policy member '\(error.field)' \(error.problem)")
            }
        }
        let settings = FeedReplay.Settings(policy: policy, apnsLatency: options.apnsLatency, tail: options.tail)
        let result: FeedReplay.Result
        do { result = try FeedReplay.run(recorded, settings: settings) } catch { throw Failure(description: error.description) }
        let report = ReplayReport(result: result)
        return Output(summary: report.summary, chart: report.chart)
    }
}
