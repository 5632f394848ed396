import Foundation
import TouchlineCore

/// Follows a personal job of the gateway (`GET /v1/personal/{job}`) until it is done.
struct PersonalJobPoller {
    /// A job as posted.
    struct Posted {
        var id: String
        /// CLOCK_MONOTONIC just before the request was written.
        var postedAt: Int64
    }

    /// `GET /v1/personal/{job}`.
    struct Progress {
        var status: String
        var targeted: Int
        var sent: Int
        var failed: [String: Int]
    }

    /// A job seen done: what it sent and the time from its post to the poll that saw it done.
    struct Finished {
        var sent: Int
        var seconds: Double
    }

    /// Posts `body` to `path` (`/v1/personal`, `/v1/channels/{id}/start`), which answers 202 with a `jobId`.
    static func post(_ body: [UInt8], to path: String, api: HTTPLoadClient) throws -> Posted {
        let postedAt = monotonicNanoseconds()
        let response = try api.send("POST", path, body: body)
        guard response.status == 202, let reply = try? JSONParser.parse(response.body), case .string(let id)? = reply[member: "jobId"] else {
            throw LoadError("POST \(path) answered \(response.status): \(response.text)")
        }
        return Posted(id: id, postedAt: postedAt)
    }

    static func progress(of job: Posted, api: HTTPLoadClient) throws -> Progress {
        let response = try api.send("GET", "/v1/personal/\(job.id)")
        guard response.status == 200, let reply = try? JSONParser.parse(response.body), case .string(let status)? = reply[member: "status"],
              case .integer(let targeted)? = reply[member: "targeted"], case .integer(let sent)? = reply[member: "sent"],
              case .object(let failures)? = reply[member: "failed"] else {
            throw LoadError("GET /v1/personal/\(job.id) answered \(response.status): \(response.text)")
        }
        var failed: [String: Int] = [:]
        for failure in failures { if case .integer(let n) = failure.value { failed[failure.name] = Int(n) } }
        return Progress(status: status, targeted: Int(targeted), sent: Int(sent), failed: failed)
    }

    /// Polls every 20 ms until the job is done; fails when it stops progressing for 30 s or
    /// ends with anything but `expected` pushes sent.
    static func wait(for job: Posted, api: HTTPLoadClient, expected: Int) throws -> Finished {
        var last = -1
        var lastProgress = monotonicNanoseconds()
        while true {
            let progress = try self.progress(of: job, api: api)
            let now = monotonicNanoseconds()
            if progress.status == "done" {
                guard progress.sent == expected, progress.failed.isEmpty else {
                    throw LoadError("job \(job.id) ended with \(progress.sent) of \(expected) sent, failed \(progress.failed)")
                }
                return Finished(sent: progress.sent, seconds: Double(now - job.postedAt) / 1e9)
            }
            if progress.sent != last { (last, lastProgress) = (progress.sent, now) }
            guard now - lastProgress < 30_000_000_000 else {
                throw LoadError("job \(job.id) made no progress for 30 s at \(progress.sent) of \(expected) sent")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}
