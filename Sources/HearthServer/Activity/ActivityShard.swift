import DequeModule
import Prometheus
import Synchronization

/// The part of the server's activity one thread records into: its own lock, counters and log, so
/// requests answered on different cores never wait for each other or share a cache line
/// (``ServerActivity`` sums the shards when they are read).
final class ActivityShard: Sendable {
    let tally = Mutex(ActivityTally())
    /// Keeps the next shard's lock off this one's cache line (shards are allocated one after another).
    private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
}

/// What one shard has counted and logged.
struct ActivityTally {
    var databases: [String: DatabaseTotals] = [:]
    var requests: [RequestCounterKey: Int] = [:]
    /// By ``RequestRecord/Transport/index``.
    var durations = [DurationCounts](repeating: DurationCounts(), count: RequestRecord.Transport.allCases.count)
    /// This shard's newest ``ServerActivity/logCapacity`` requests: the server's newest that many are
    /// among the shards' logs together.
    var log = Deque<LoggedRequest>()

    mutating func add(_ request: RequestRecord, sequence: Int, time: Double) {
        if let namespace = request.namespace {
            switch request.kind {
            case .read: databases[namespace, default: DatabaseTotals()].reads += 1
            case .write: databases[namespace, default: DatabaseTotals()].writes += 1
            case .denied: databases[namespace, default: DatabaseTotals()].denied += 1
            case .other: break
            }
        }
        requests[RequestCounterKey(transport: request.transport, status: request.status), default: 0] += 1
        durations[request.transport.index].record(request.duration)
        log.append(LoggedRequest(sequence: sequence, time: time, record: request))
        if log.count > ServerActivity.logCapacity { log.removeFirst() }
    }
}

/// A histogram of request durations over ``ServerActivity/durationBuckets``, counted per bucket (not
/// cumulatively: one increment a request) and rendered as Prometheus's cumulative `_bucket` lines.
struct DurationCounts: Sendable {
    /// Requests at most each bound long, not longer than the bound before; the last counts the rest.
    var buckets = [Int](repeating: 0, count: ServerActivity.durationBuckets.count + 1)
    var sum: Duration = .zero
    var count = 0

    mutating func record(_ duration: Duration) {
        let bucket = ServerActivity.durationBuckets.firstIndex { duration <= $0 } ?? ServerActivity.durationBuckets.count
        buckets[bucket] += 1
        sum += duration
        count += 1
    }

    mutating func add(_ other: DurationCounts) {
        for index in buckets.indices { buckets[index] += other.buckets[index] }
        sum += other.sum
        count += other.count
    }

    static let name = "hearth_request_duration_seconds"
    static let help = "Time from a request's arrival to its response (WebSocket: to its reply)."

    /// Appends `hearth_request_duration_seconds` with one series per transport, in the text format
    /// swift-prometheus gives its own histograms.
    static func emit(_ histograms: [DurationCounts], into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "# HELP \(name) \(help)\n# TYPE \(name) histogram\n".utf8)
        for transport in RequestRecord.Transport.allCases {
            let histogram = histograms[transport.index]
            let label = "transport=\"\(transport.rawValue)\""
            var cumulative = 0
            for (bound, count) in zip(ServerActivity.durationBuckets, histogram.buckets) {
                cumulative += count
                buffer.append(contentsOf: "\(name)_bucket{\(label),le=\"\(bound.bucketRepresentation)\"} \(cumulative)\n".utf8)
            }
            buffer.append(contentsOf: "\(name)_bucket{\(label),le=\"+Inf\"} \(histogram.count)\n".utf8)
            buffer.append(contentsOf: "\(name)_sum{\(label)} \(histogram.sum.bucketRepresentation)\n".utf8)
            buffer.append(contentsOf: "\(name)_count{\(label)} \(histogram.count)\n".utf8)
        }
    }
}
