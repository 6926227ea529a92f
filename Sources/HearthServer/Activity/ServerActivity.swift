import DequeModule
import Foundation
import HearthAccess
import HearthCore
import Prometheus
import Synchronization

/// What the server is doing, live: reads, writes and rule denials per database, the most recent
/// requests on every transport, and (sampled when asked) connections, listens and stored bytes. The
/// console's Activity view polls them (`GET /.console/activity`); `/metrics` renders the same counters
/// for Prometheus through swift-prometheus.
///
/// For example:
/// ```swift
/// let activity = ServerActivity(clock: .system)
/// activity.record(RequestRecord(transport: .http, method: "GET", path: "/posts.json", namespace: "demo", status: "200", duration: .milliseconds(2)))
/// let text = activity.prometheus.emitToString()
/// ```
final class ServerActivity: Sendable {
    /// The Prometheus registry behind `/metrics`: one per server, so in-process test servers don't mix.
    let prometheus = PrometheusCollectorRegistry()
    let clock: ServerClock
    private let databases = Mutex<[String: DatabaseCounters]>([:])
    private let log = Mutex(RecentRequests())
    /// `hearth_requests_total` by transport and status, looked up here rather than in the registry:
    /// the registry builds its key and takes its lock for every lookup, and every request makes one.
    private let requestCounters = Mutex<[RequestCounterKey: Counter]>([:])

    private struct RequestCounterKey: Hashable {
        var transport: RequestRecord.Transport
        var status: String
    }
    private let httpDuration: DurationHistogram
    private let websocketDuration: DurationHistogram

    /// How many requests the log keeps for the console.
    static let logCapacity = 500

    init(clock: ServerClock) {
        self.clock = clock
        let buckets: [Duration] = [.microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                                   .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(1000), .seconds(5)]
        let duration = MetricNameDescriptor.hearth(
            "request_duration", unit: "seconds", help: "Time from a request's arrival to its response (WebSocket: to its reply)."
        )
        httpDuration = prometheus.makeDurationHistogram(descriptor: duration, labels: [("transport", "http")], buckets: buckets)
        websocketDuration = prometheus.makeDurationHistogram(descriptor: duration, labels: [("transport", "websocket")], buckets: buckets)
    }

    /// The counters of one database, created on first use.
    func counters(_ namespace: String) -> DatabaseCounters {
        databases.withLock { databases in
            if let existing = databases[namespace] { return existing }
            let counters = DatabaseCounters(namespace: namespace, registry: prometheus)
            databases[namespace] = counters
            return counters
        }
    }

    /// Counts one finished request against its database (read, write or denial) and adds it to the log.
    func record(_ request: RequestRecord) {
        if let namespace = request.namespace {
            let counters = counters(namespace)
            switch request.kind {
            case .read: counters.reads.add()
            case .write: counters.writes.add()
            case .denied: counters.denied.add()
            case .other: break
            }
        }
        requestCounter(request.transport, request.status).increment()
        (request.transport == .http ? httpDuration : websocketDuration).record(request.duration)
        let time = clock.wallMilliseconds
        log.withLock { $0.append(request, time: time) }
    }

    private func requestCounter(_ transport: RequestRecord.Transport, _ status: String) -> Counter {
        let key = RequestCounterKey(transport: transport, status: status)
        if let counter = requestCounters.withLock({ $0[key] }) { return counter }
        let counter = prometheus.makeCounter(
            descriptor: .hearth(
                "requests", unit: "total", help: "Requests answered, by transport and status (HTTP code, or the WebSocket reply's status)."
            ),
            labels: [("transport", transport.rawValue), ("status", status)]
        )
        requestCounters.withLock { $0[key] = counter }
        return counter
    }

    /// The requests logged after sequence number `after`, oldest first.
    func recentRequests(after: Int) -> [RecentRequests.Entry] {
        log.withLock { $0.entries(after: after) }
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

/// Reads, writes and rule denials of one database: an atomic each for the console's rates, and the
/// matching Prometheus counters.
final class DatabaseCounters: Sendable {
    final class Tally: Sendable {
        private let value = Atomic<Int>(0)
        private let counter: Counter

        init(_ counter: Counter) { self.counter = counter }

        func add() {
            value.wrappingAdd(1, ordering: .relaxed)
            counter.increment()
        }

        var total: Int { value.load(ordering: .relaxed) }
    }

    let reads: Tally
    let writes: Tally
    let denied: Tally

    init(namespace: String, registry: PrometheusCollectorRegistry) {
        let labels = [("namespace", namespace)]
        reads = Tally(registry.makeCounter(
            descriptor: .hearth("reads", unit: "total", help: "Reads, listens included, that were answered."), labels: labels
        ))
        writes = Tally(registry.makeCounter(descriptor: .hearth("writes", unit: "total", help: "Writes acknowledged as durable."), labels: labels))
        denied = Tally(registry.makeCounter(
            descriptor: .hearth("denied", unit: "total", help: "Requests refused by the security rules."), labels: labels
        ))
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
    enum Transport: String, Sendable {
        case http
        case websocket
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

    /// The URL path or database path, without its query.
    var path: String {
        switch location {
        case .url(let path): path
        case .database(let path): path.description
        }
    }
}

/// The newest requests, numbered, in a ring.
struct RecentRequests {
    struct Entry: Sendable {
        var sequence: Int
        var time: Double
        var record: RequestRecord
    }

    private var entries = Deque<Entry>()
    private var nextSequence = 1

    mutating func append(_ record: RequestRecord, time: Double) {
        entries.append(Entry(sequence: nextSequence, time: time, record: record))
        nextSequence += 1
        if entries.count > ServerActivity.logCapacity { entries.removeFirst() }
    }

    func entries(after sequence: Int) -> [Entry] {
        let sequence = max(0, sequence)
        guard let last = entries.last, last.sequence > sequence else { return [] }
        let skip = max(0, entries.count - (last.sequence - sequence))
        return Array(entries.dropFirst(skip))
    }
}
