import Foundation
import HearthAccess
import HearthCore
import Hummingbird
import Prometheus
import Synchronization

/// What the server is doing, live: reads, writes and rule denials per database, the most recent
/// requests on every transport, and (sampled when asked) connections, listens and stored bytes. The
/// console's Activity view polls them (`GET /.console/activity`); `/metrics` renders the same counters
/// for Prometheus through swift-prometheus.
///
/// Every answered request is recorded, so recording is on the hot path of every transport. Each thread
/// records into a shard of its own (``ActivityShard``): requests answered on different cores share no
/// lock and no cache line. Reading (the console, a scrape) sums the shards; the counters of `/metrics`
/// are brought up to date when it is scraped (decision 0024).
///
/// For example:
/// ```swift
/// let activity = ServerActivity(clock: .system)
/// activity.record(RequestRecord(transport: .http, method: "GET", path: "/posts.json", namespace: "demo", status: "200", duration: .milliseconds(2)))
/// let text = String(decoding: activity.metricsText(), as: UTF8.self)
/// ```
final class ServerActivity: Sendable {
    /// The Prometheus registry behind `/metrics`: one per server, so in-process test servers don't mix.
    let prometheus = PrometheusCollectorRegistry()
    let clock: ServerClock
    private let shards: [ActivityShard]
    /// Numbers the logged requests across shards, so the console can ask for those after the last it saw.
    private let sequence = Atomic<Int>(0)
    /// The Prometheus counters and the totals they were last brought up to.
    private let published = Mutex(PublishedCounters())

    /// How many requests the log keeps for the console.
    static let logCapacity = 500

    /// The bounds of `hearth_request_duration_seconds`.
    static let durationBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(1000), .seconds(5),
    ]

    init(clock: ServerClock, shardCount: Int = ServerActivity.defaultShardCount) {
        self.clock = clock
        shards = (0..<max(1, shardCount)).map { _ in ActivityShard() }
    }

    /// Room for the event loops and the concurrency pool's threads, one core each, and a few more.
    static var defaultShardCount: Int { min(32, 2 * ProcessInfo.processInfo.activeProcessorCount + 2) }

    /// Counts one finished request against its database (read, write or denial) and adds it to the log.
    func record(_ request: RequestRecord) {
        let time = clock.wallMilliseconds
        shards[ThreadSlot.current % shards.count].tally.withLock { tally in
            // Numbered under the shard's lock, so each shard's log is in order and drops its oldest: the
            // newest `logCapacity` of all are then always among the shards' logs.
            tally.add(request, sequence: sequence.wrappingAdd(1, ordering: .relaxed).newValue, time: time)
        }
    }

    /// The reads, writes and denials counted for `namespace` so far.
    func totals(_ namespace: String) -> DatabaseTotals {
        shards.reduce(into: DatabaseTotals()) { totals, shard in
            if let counted = shard.tally.withLock({ $0.databases[namespace] }) { totals.add(counted) }
        }
    }

    /// The requests logged after sequence number `after`, oldest first: at most ``logCapacity``, the
    /// newest. A number missing among them belongs to a request being logged in a shard read before it
    /// was: the ones after it are held back until the next ask, so a poller that continues from the last
    /// number it saw misses none.
    func recentRequests(after: Int) -> [LoggedRequest] {
        Self.newest(of: shards.map { shard in shard.tally.withLock { tally in Array(tally.log.drop { $0.sequence <= after }) } })
    }

    /// The newest ``logCapacity`` of the shards' logs (each in order), oldest first, up to the first
    /// number missing among them.
    static func newest(of logs: [[LoggedRequest]]) -> [LoggedRequest] {
        var merged = logs.flatMap { $0 }
        merged.sort { $0.sequence < $1.sequence }
        let newest = merged.suffix(logCapacity)
        guard let gap = zip(newest, newest.dropFirst()).first(where: { $1.sequence != $0.sequence + 1 }) else { return Array(newest) }
        return Array(newest.prefix { $0.sequence <= gap.0.sequence })
    }

    /// `/metrics` in Prometheus's text format: the registry's metrics (counters brought up to the
    /// shards' totals first; `namespaces`, the open databases, have their series even before their
    /// first request), then the request-duration histogram.
    func metricsText(namespaces: [String] = []) -> [UInt8] {
        var buffer: [UInt8] = []
        // The shards are summed under the lock: a scrape that overlaps another must not bring the
        // counters to totals older than the ones they show (swift-prometheus traps on a negative step).
        let durations = published.withLock { published in
            var databases = Dictionary(namespaces.map { ($0, DatabaseTotals()) }, uniquingKeysWith: { first, _ in first })
            var requests: [RequestCounterKey: Int] = [:]
            var durations = [DurationCounts](repeating: DurationCounts(), count: RequestRecord.Transport.allCases.count)
            for shard in shards {
                shard.tally.withLock { tally in
                    databases.merge(tally.databases) { $0.adding($1) }
                    requests.merge(tally.requests, uniquingKeysWith: +)
                    for index in durations.indices { durations[index].add(tally.durations[index]) }
                }
            }
            published.update(databases: databases, requests: requests, registry: prometheus)
            prometheus.emit(into: &buffer)
            return durations
        }
        DurationCounts.emit(durations, into: &buffer)
        return buffer
    }

    /// Sets the live gauges from a sample of the server's state, just before they are read.
    func setGauges(_ sample: ActivitySampler.Sample) {
        prometheus.makeGauge(descriptor: .hearth("websocket_connections", help: "Open realtime (WebSocket) connections."))
            .set(Double(sample.websocketConnections))
        prometheus.makeGauge(descriptor: .hearth("event_streams", help: "Open Server-Sent Events streams.")).set(Double(sample.eventStreams))
        for database in sample.databases {
            let labels = [("namespace", database.namespace)]
            prometheus.makeGauge(descriptor: .hearth("listens", help: "Active listens (WebSocket and event streams)."), labels: labels)
                .set(Double(database.listens))
            if let bytes = database.storedBytes {
                prometheus.makeGauge(descriptor: .hearth("storage", unit: "bytes", help: "Bytes the database takes on disk."), labels: labels)
                    .set(Double(bytes))
            }
        }
    }
}

/// Reads, writes and rule denials of one database.
struct DatabaseTotals: Sendable, Equatable {
    var reads = 0
    var writes = 0
    var denied = 0

    mutating func add(_ other: DatabaseTotals) {
        reads += other.reads
        writes += other.writes
        denied += other.denied
    }

    func adding(_ other: DatabaseTotals) -> DatabaseTotals {
        var sum = self
        sum.add(other)
        return sum
    }
}

/// `hearth_requests_total`'s labels.
struct RequestCounterKey: Hashable, Sendable {
    var transport: RequestRecord.Transport
    var status: String
}

/// One logged request, numbered in the order requests were recorded.
struct LoggedRequest: Sendable {
    var sequence: Int
    /// When it was recorded, in milliseconds since 1970.
    var time: Double
    var record: RequestRecord
}

/// The Prometheus counters of the activity, and the totals they show: a scrape adds what was counted since.
private struct PublishedCounters {
    struct Database {
        var reads: Counter
        var writes: Counter
        var denied: Counter
        var shown = DatabaseTotals()
    }

    var databases: [String: Database] = [:]
    var requests: [RequestCounterKey: (counter: Counter, shown: Int)] = [:]

    mutating func update(databases totals: [String: DatabaseTotals], requests counted: [RequestCounterKey: Int], registry: PrometheusCollectorRegistry) {
        for (namespace, total) in totals {
            var database = databases[namespace] ?? Database(namespace: namespace, registry: registry)
            database.reads.increment(by: Int64(total.reads - database.shown.reads))
            database.writes.increment(by: Int64(total.writes - database.shown.writes))
            database.denied.increment(by: Int64(total.denied - database.shown.denied))
            database.shown = total
            databases[namespace] = database
        }
        for (key, count) in counted {
            let counter = requests[key]?.counter ?? registry.makeCounter(
                descriptor: .hearth(
                    "requests", unit: "total", help: "Requests answered, by transport and status (HTTP code, or the WebSocket reply's status)."
                ),
                labels: [("transport", key.transport.rawValue), ("status", key.status)]
            )
            counter.increment(by: Int64(count - (requests[key]?.shown ?? 0)))
            requests[key] = (counter, count)
        }
    }
}

extension PublishedCounters.Database {
    init(namespace: String, registry: PrometheusCollectorRegistry) {
        let labels = [("namespace", namespace)]
        reads = registry.makeCounter(descriptor: .hearth("reads", unit: "total", help: "Reads, listens included, that were answered."), labels: labels)
        writes = registry.makeCounter(descriptor: .hearth("writes", unit: "total", help: "Writes acknowledged as durable."), labels: labels)
        denied = registry.makeCounter(descriptor: .hearth("denied", unit: "total", help: "Requests refused by the security rules."), labels: labels)
    }
}

extension MetricNameDescriptor {
    /// One of Hearth's metrics, `hearth_<name>_<unit>` (`unit` may be empty, as for a count of things).
    ///
    /// For example: `.hearth("requests", unit: "total", help: "Requests answered.")` names `hearth_requests_total`.
    static func hearth(_ name: String, unit: String = "", help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "hearth", metricName: name, unitName: unit, helpText: help)
    }
}

/// One finished request, as the activity log shows it. Never holds a query string, a token or a value.
struct RequestRecord: Sendable {
    enum Transport: String, Sendable, CaseIterable {
        case http
        case websocket

        /// Its position in ``allCases``, for per-transport arrays.
        var index: Int {
            switch self {
            case .http: 0
            case .websocket: 1
            }
        }
    }

    enum Kind: Sendable {
        case read
        case write
        case denied
        case other
    }

    /// Where a request went. A database path becomes text only when the console shows it: every
    /// WebSocket write records one, and rendering each was a third of what recording it cost.
    enum Location: Sendable {
        case url(String)
        case database(DatabasePath)
    }

    var transport: Transport
    /// `GET`, `PUT`, … or the WebSocket action (`listen`, `put`, `merge`, `get`, `onDisconnect`).
    var method: String
    var location: Location
    var namespace: String?
    /// The HTTP status code, or the WebSocket reply's status (`ok`, `permission_denied`, …).
    var status: String
    var duration: Duration
    var kind: Kind = .other

    init(
        transport: Transport, method: String, path: String, namespace: String?, status: String, duration: Duration, kind: Kind = .other
    ) {
        self.init(transport: transport, method: method, location: .url(path), namespace: namespace, status: status, duration: duration, kind: kind)
    }

    init(
        transport: Transport, method: String, location: Location, namespace: String?, status: String, duration: Duration,
        kind: Kind = .other
    ) {
        self.transport = transport
        self.method = method
        self.location = location
        self.namespace = namespace
        self.status = status
        self.duration = duration
        self.kind = kind
    }

    /// An HTTP request answered with `status`, timed from `started` to now.
    static func http(
        _ request: Request, path: String, status: Int, started: ContinuousClock.Instant, namespace: String?, kind: Kind
    ) -> RequestRecord {
        RequestRecord(
            transport: .http, method: request.method.rawValue, path: path, namespace: namespace, status: String(status),
            duration: ContinuousClock.now - started, kind: kind
        )
    }

    /// The URL path or database path, without its query.
    var path: String {
        switch location {
        case .url(let path): path
        case .database(let path): path.description
        }
    }
}
