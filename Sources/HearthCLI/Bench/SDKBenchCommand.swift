import ArgumentParser
import AsyncHTTPClient
import Dispatch
import Foundation
import Hearth
import NIOCore
import NIOHTTP1
import Synchronization

/// The Swift SDK as a client sees it: events per second through `observe` and through the
/// `AsyncSequence`, memory per idle listener, first value of a location the client already holds, and
/// offline writes flushed after a reconnect. Runs against a `hearth serve --emulator` (the SDK connects
/// as an emulator client: open rules).
struct SDKBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdk",
        abstract: "The Swift SDK: child events/s to one client, memory per listener, first value from cache, offline flush.",
        discussion: "Start the server with `hearth serve --emulator` (any rules that let the bench write its namespace work too)."
    )

    @Option(help: "The server's URL, with the namespace.")
    var url = "http://127.0.0.1:9000?ns=sdkbench"

    @Option(help: "Children in the bulk write whose child_added events are counted.")
    var children = 100_000

    @Option(help: "Children in the multi-path REST PATCH whose child_added events are counted (0: no PATCH).")
    var patchChildren = 100_000

    @Option(help: "Single writes streamed, issued without waiting, then all acknowledged: by one client with no listener anywhere (write), by a second client while the first counts their events (stream), and by the client that observes them (echo).")
    var writes = 100_000

    @Option(help: "Idle listeners opened to measure the client's memory per listener.")
    var listeners = 10_000

    @Option(help: "Times a second observer of a location already held is attached.")
    var cacheReads = 1_000

    @Option(help: "Writes made offline, then flushed when the client reconnects.")
    var offlineWrites = 10_000

    @Option(help: "The parts to run, comma-separated: bulk, rest, write, stream, echo, idle, warm, offline (all by default).")
    var only = "bulk,rest,write,stream,echo,idle,warm,offline"

    func run() async throws {
        let run = UUID().uuidString.prefix(8)
        let parts = Set(only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        say("Hearth SDK benchmark against \(url) (run \(run))")
        if parts.contains("bulk") { try await bulkEvents(root: "bulk-\(run)") }
        if parts.contains("rest") { try await restBursts(root: "rest-\(run)") }
        if parts.contains("write") { try await streamedWrites(root: "write-\(run)") }
        if parts.contains("stream") { try await streamedEvents(root: "stream-\(run)") }
        if parts.contains("echo") { try await streamedOwnWrites(root: "echo-\(run)") }
        if parts.contains("idle") { try await memoryPerListener(root: "idle-\(run)") }
        if parts.contains("warm") { try await firstValueFromCache(root: "warm-\(run)") }
        if parts.contains("offline") { try await offlineFlush(root: "offline-\(run)") }
    }

    private func client() throws -> Database {
        let database = try Database(url: url)
        database.callbackQueue = DispatchQueue(label: "hearth.bench.callbacks")
        return database
    }

    /// Child events for one write of many children: through `observe`, then through the AsyncSequence.
    private func bulkEvents(root: String) async throws {
        let data = Dictionary(uniqueKeysWithValues: (0..<children).map { (String(format: "k%07d", $0), $0 as Any) })
        for mode in ["observe", "AsyncSequence"] {
            let reader = try client()
            let writer = try client()
            let location = "\(root)-\(mode == "observe" ? "o" : "s")"
            let query = reader.reference(withPath: location)
            // Wait until the listen is in place (its first value arrives), so the write's events are counted.
            _ = try await query.getData()
            let counter = EventCounter(target: children)
            var consumer: Task<Void, any Error>?
            if mode == "observe" {
                query.observe(.childAdded) { _ in counter.count() }
            } else {
                let events = query.events(.childAdded)
                consumer = Task { for try await _ in events { if counter.count() { break } } }
            }
            try await waitForListen(reader, location)
            let started = ContinuousClock.now
            _ = try await writer.reference(withPath: location).setValue(data)
            try await counter.done(within: .seconds(300), what: "\(children) child_added events")
            let elapsed = ContinuousClock.now - started
            consumer?.cancel()
            report("bulk write of \(children) children, child_added through \(mode)", events: children, elapsed)
            if let span = counter.deliverySpan {
                report("  of which delivery at the client (first event to last)", events: children - 1, span)
            }
            query.removeAllObservers()
            reader.goOffline()
            writer.goOffline()
        }
    }

    /// End to end from the server to one SDK client: one REST write (not an SDK write) of many
    /// children, timed from sending the request to the last `child_added` event at the observer.
    /// A PUT of `children` children, then a multi-path PATCH of `patchChildren` paths.
    private func restBursts(root: String) async throws {
        try await restBurst(root: "\(root)-put", method: .PUT, count: children)
        if patchChildren > 0 { try await restBurst(root: "\(root)-patch", method: .PATCH, count: patchChildren) }
    }

    private func restBurst(root: String, method: HTTPMethod, count: Int) async throws {
        let reader = try client()
        let counter = EventCounter(target: count)
        reader.reference(withPath: root).observe(.childAdded) { _ in counter.count() }
        try await waitForListen(reader, root)
        guard var components = URLComponents(string: url) else { throw CLIError("invalid URL \(url)") }
        components.path = "/\(root).json"
        var body = ByteBuffer()
        body.writeString("{")
        for index in 0..<count {
            if index > 0 { body.writeString(",") }
            body.writeString("\"r\(String(format: "%07d", index))\":\(index)")
        }
        body.writeString("}")
        var request = HTTPClientRequest(url: components.string ?? url)
        request.method = method
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(body)
        let started = ContinuousClock.now
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
        let answered = ContinuousClock.now
        guard response.status == .ok else { throw CLIError("the REST \(method.rawValue) was answered \(response.status)") }
        try await counter.done(within: .seconds(600), what: "\(count) child_added events")
        report("REST \(method.rawValue) of \(count) children, child_added through observe: end to end (request sent to last event)", events: count, ContinuousClock.now - started)
        report("  of which the server's answer to the \(method.rawValue)", events: count, answered - started)
        if let span = counter.deliverySpan {
            report("  of which delivery at the client (first event to last)", events: count - 1, span)
        }
        reader.goOffline()
    }

    /// Many single writes streamed by one client (each `setValue` issued without waiting for the one
    /// before), timed until the server has acknowledged every one, with no listener anywhere: the
    /// writing client and the server alone (issue 30's "streamed writes/s from one SDK client").
    private func streamedWrites(root: String) async throws {
        let writer = try client()
        _ = try await streamWrites(from: writer, to: root, what: "no listener, ")
        writer.goOffline()
    }

    /// Many single writes streamed by one client (each `setValue` issued without waiting for the one
    /// before), timed until the server has acknowledged every one, while a second client counts their
    /// `child_added` events: the writer's rate (issue, pipelining, acks) and the rate end to end into
    /// one client.
    private func streamedEvents(root: String) async throws {
        let reader = try client()
        let writer = try client()
        let counter = EventCounter(target: writes)
        reader.reference(withPath: root).observe(.childAdded) { _ in counter.count() }
        try await waitForListen(reader, root)
        let (started, _) = try await streamWrites(from: writer, to: root, what: "")
        try await counter.done(within: .seconds(300), what: "\(writes) child_added events")
        let allEvents = ContinuousClock.now
        report("\(writes) single writes from another client, child_added through observe: end to end into one client", events: writes, allEvents - started)
        if let span = counter.deliverySpan {
            report("  of which delivery at the client (first event to last)", events: writes - 1, span)
        }
        reader.goOffline()
        writer.goOffline()
    }

    /// Streams ``writes`` single `setValue`s from `writer` under `root` and waits for every
    /// acknowledgement; reports the rates. Returns when the first was issued and the last acknowledged.
    private func streamWrites(from writer: Database, to root: String, what: String) async throws
        -> (started: ContinuousClock.Instant, acknowledged: ContinuousClock.Instant)
    {
        _ = try await writer.reference(withPath: "\(root)-writer-ready").setValue(true)
        let keys = (0..<writes).map { String(format: "w%07d", $0) }
        let started = ContinuousClock.now
        let (acknowledged, failures) = issueWrites(keys, to: writer.reference(withPath: root))
        let issued = ContinuousClock.now
        try await acknowledged.done(within: .seconds(300), what: "\(writes) writes acknowledged")
        let allAcknowledged = ContinuousClock.now
        let failed = failures.seen
        if failed > 0 { throw CLIError("\(failed) of the \(writes) streamed writes failed") }
        report("\(writes) streamed writes from one SDK client, \(what)all acknowledged (first setValue to last ack)", events: writes, allAcknowledged - started, unit: "writes")
        report("  of which issuing the setValue calls", events: writes, issued - started, unit: "writes")
        return (started, allAcknowledged)
    }

    /// Sets each of `keys` under `list` to its index, without waiting: the counters count the
    /// acknowledgements and the failures.
    private func issueWrites(_ keys: [String], to list: DatabaseReference) -> (acknowledged: EventCounter, failures: EventCounter) {
        let acknowledged = EventCounter(target: keys.count)
        let failures = EventCounter(target: Int.max)
        for (index, key) in keys.enumerated() {
            list.child(key).setValue(index) { error, _ in
                if error != nil { failures.count() }
                acknowledged.count()
            }
        }
        return (acknowledged, failures)
    }

    /// Single writes streamed to a location the writing client observes itself, as a chat shows its
    /// own messages: each raises its event at once, locally, and the server's echo of it arrives while
    /// the write is still pending.
    private func streamedOwnWrites(root: String) async throws {
        let database = try client()
        let events = EventCounter(target: writes)
        let list = database.reference(withPath: root)
        list.observe(.childAdded) { _ in events.count() }
        try await waitForListen(database, root)
        let keys = (0..<writes).map { String(format: "w%07d", $0) }
        let started = ContinuousClock.now
        let (acknowledged, failures) = issueWrites(keys, to: list)
        try await events.done(within: .seconds(300), what: "\(writes) child_added events")
        try await acknowledged.done(within: .seconds(300), what: "\(writes) writes acknowledged")
        let allAcknowledged = ContinuousClock.now
        let failed = failures.seen
        if failed > 0 { throw CLIError("\(failed) of the \(writes) streamed writes failed") }
        report("\(writes) streamed writes to a location the same client observes, all acknowledged", events: writes, allAcknowledged - started, unit: "writes")
        database.goOffline()
    }

    /// The client's resident memory per idle `.value` listener (distinct locations).
    private func memoryPerListener(root: String) async throws {
        let reader = try client()
        _ = try await reader.reference(withPath: "\(root)/warmup").getData()
        let before = residentBytes(of: getpid()) ?? 0
        let counter = EventCounter(target: listeners)
        for index in 0..<listeners {
            reader.reference(withPath: "\(root)/l\(index)").observe(.value) { _ in counter.count() }
        }
        try await counter.done(within: .seconds(300), what: "the first value of \(listeners) listeners")
        let after = residentBytes(of: getpid()) ?? 0
        let perListener = Double(after - before) / Double(listeners)
        say(String(format: "  %d idle listeners: client RSS +%d KiB, %.2f KiB per listener", listeners, (after - before) / 1024, perListener / 1024))
        reader.goOffline()
    }

    /// Time from `observe` to the first value of a location the client already holds (another listener
    /// keeps it synced): served from the client's cache, without a round trip.
    private func firstValueFromCache(root: String) async throws {
        let reader = try client()
        let location = reader.reference(withPath: root)
        _ = try await location.setValue(["title": "warm", "items": Dictionary(uniqueKeysWithValues: (0..<100).map { ("i\($0)", $0) })])
        location.observe(.value) { _ in }
        try await waitForListen(reader, root)
        var samples: [Duration] = []
        for _ in 0..<cacheReads {
            let started = ContinuousClock.now
            let arrived = EventCounter(target: 1)
            let handle = location.observe(.value) { _ in arrived.count() }
            try await arrived.done(within: .seconds(30), what: "a first value from the cache")
            samples.append(ContinuousClock.now - started)
            location.removeObserver(withHandle: handle)
        }
        samples.sort()
        let median = samples[samples.count / 2], p99 = samples[min(samples.count - 1, samples.count * 99 / 100)]
        say("  first value from cache (\(cacheReads) observers): median \(microseconds(median)) µs, p99 \(microseconds(p99)) µs")
        reader.goOffline()
    }

    /// Writes made while offline, flushed in order when the client reconnects.
    private func offlineFlush(root: String) async throws {
        let writer = try client()
        _ = try await writer.reference(withPath: "\(root)/ready").setValue(true)
        writer.goOffline()
        let acknowledged = EventCounter(target: offlineWrites)
        let list = writer.reference(withPath: "\(root)/items")
        for index in 0..<offlineWrites {
            list.child(String(format: "o%07d", index)).setValue(index) { error, _ in
                if error == nil { acknowledged.count() }
            }
        }
        let started = ContinuousClock.now
        writer.goOnline()
        try await acknowledged.done(within: .seconds(300), what: "\(offlineWrites) offline writes acknowledged")
        report("\(offlineWrites) offline writes flushed after reconnecting", events: offlineWrites, ContinuousClock.now - started, unit: "writes")
        let stored = try await writer.reference(withPath: "\(root)/items").getData()
        guard stored.childrenCount == offlineWrites else {
            throw CLIError("the server holds \(stored.childrenCount) of the \(offlineWrites) offline writes")
        }
        writer.goOffline()
    }

    /// Waits until the client's listen on `path` is acknowledged: a write by the same client to a
    /// sibling marker is echoed after it.
    private func waitForListen(_ database: Database, _ path: String) async throws {
        _ = try await database.reference(withPath: "\(path)-ready").setValue(true)
    }

    private func report(_ what: String, events: Int, _ elapsed: Duration, unit: String = "events") {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        say(String(format: "  %@: %.3f s, %.0f %@/s", what, seconds, Double(events) / seconds, unit))
    }

    /// Writes a line at once (unbuffered), so a log file shows progress during a long run.
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private func microseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000)
    }
}

/// Counts callbacks from any thread; `done` waits until the target is reached.
private final class EventCounter: Sendable {
    let target: Int
    private let state = Mutex<(count: Int, waiter: CheckedContinuation<Void, Never>?, first: ContinuousClock.Instant?, last: ContinuousClock.Instant?)>((0, nil, nil, nil))

    /// The time from the first event to the last: the client's delivery rate, without the time the
    /// server took to store the data and start sending it.
    var deliverySpan: Duration? {
        state.withLock { state in
            guard let first = state.first, let last = state.last else { return nil }
            return last - first
        }
    }

    init(target: Int) {
        self.target = target
    }

    /// The events counted so far.
    var seen: Int { state.withLock { $0.count } }

    /// Counts one event; true once the target is reached.
    @discardableResult
    func count() -> Bool {
        let (reached, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            state.count += 1
            let now = ContinuousClock.now
            if state.first == nil { state.first = now }
            if state.count <= target { state.last = now }
            guard state.count == target, let waiter = state.waiter else { return (state.count >= target, nil) }
            state.waiter = nil
            return (true, waiter)
        }
        waiter?.resume()
        return reached
    }

    func done(within limit: Duration, what: String) async throws {
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let already = self.state.withLock { state -> Bool in
                        if state.count >= self.target { return true }
                        state.waiter = continuation
                        return false
                    }
                    if already { continuation.resume() }
                }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            if !first {
                // Release the waiter so the group can end.
                let waiter = self.state.withLock { state in defer { state.waiter = nil }; return state.waiter }
                waiter?.resume()
            }
            group.cancelAll()
            return first
        }
        if !finished {
            let seen = state.withLock { $0.count }
            throw CLIError("timed out waiting for \(what): \(seen) of \(target) after \(limit)")
        }
    }
}
