import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// REST read and write throughput and write→listener latency against a running server holding the
/// generated users (`hearth bench import --serve-seconds`), to compare a server with a memory limit
/// with one holding its whole tree.
struct ServedLoadBench {
    let base: String
    let users: Int
    let seconds: Double
    let concurrency: Int

    struct Result {
        var reads: Int
        var readLatency: LatencyStatistics
        var writes: Int
        var writeLatency: LatencyStatistics
        var delivery: LatencyStatistics
        var seconds: Double
    }

    func run(progress: (String) -> Void) async throws -> Result {
        progress("REST reads of random users for \(seconds) s (\(concurrency) at a time)")
        let (reads, readLatency) = try await load { generator in
            HTTPClientRequest(url: base + "/users/\(user(&generator)).json")
        }
        progress("REST writes of random users' scores for \(seconds) s, with a listener timing its own user's writes")
        async let listened = listen()
        let (writes, writeLatency) = try await load { generator in
            var request = HTTPClientRequest(url: base + "/users/\(user(&generator))/score.json?print=silent")
            request.method = .PUT
            request.body = .bytes(ByteBuffer(string: String(generator.next() % 1000)))
            return request
        }
        let delivery = try await listened
        return Result(reads: reads, readLatency: readLatency, writes: writes, writeLatency: writeLatency, delivery: delivery, seconds: seconds)
    }

    /// A random user's id, over the whole database.
    func user(_ generator: inout SystemRandomNumberGenerator) -> String {
        "u" + String(format: "%07d", Int(generator.next() % UInt64(users)))
    }

    /// `concurrency` loops sending requests for `seconds`; how many succeeded and their latencies.
    func load(_ make: @escaping @Sendable (inout SystemRandomNumberGenerator) -> HTTPClientRequest) async throws -> (Int, LatencyStatistics) {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        return try await withThrowingTaskGroup(of: (Int, LatencyStatistics).self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var generator = SystemRandomNumberGenerator()
                    var statistics = LatencyStatistics()
                    var done = 0
                    while ContinuousClock.now < deadline {
                        let started = wallMicroseconds()
                        let response = try await HTTPClient.shared.execute(make(&generator), timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 16 << 20)
                        guard response.status == .ok || response.status == .noContent else { throw CLIError("the server answered \(response.status) under load") }
                        statistics.add(wallMicroseconds() - started)
                        done += 1
                    }
                    return (done, statistics)
                }
            }
            var total = 0
            var all = LatencyStatistics()
            for try await (done, statistics) in group {
                total += done
                all.samples += statistics.samples
            }
            return (total, all)
        }
    }

    /// An event stream on one user while a writer sets its `probe` to the send time every 10 ms: the
    /// time from each write's sending to its event.
    func listen() async throws -> LatencyStatistics {
        let path = "/users/u0000001/probe.json"
        var request = HTTPClientRequest(url: base + path)
        request.headers.add(name: "Accept", value: "text/event-stream")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        guard response.status == .ok else { throw CLIError("the listener was refused: \(response.status)") }
        let received = Mutex(LatencyStatistics())
        let reader = Task {
            var pending = ""
            // The first event is the value as it was when the stream opened, not one of these writes.
            var initial = true
            for try await chunk in response.body {
                pending += String(buffer: chunk)
                while let newline = pending.firstIndex(of: "\n") {
                    let line = pending[..<newline]
                    pending = String(pending[pending.index(after: newline)...])
                    // data: {"path":"/","data":<send time in µs>}
                    guard line.hasPrefix("data: {"), let range = line.range(of: #""data":"#) else { continue }
                    if initial {
                        initial = false
                        continue
                    }
                    let digits = line[range.upperBound...].prefix { $0.isNumber }
                    if let sent = Int64(digits) {
                        let now = wallMicroseconds()
                        received.withLock { $0.add(now - sent) }
                    }
                }
            }
        }
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            var write = HTTPClientRequest(url: base + path + "?print=silent")
            write.method = .PUT
            write.body = .bytes(ByteBuffer(string: String(wallMicroseconds())))
            _ = try await HTTPClient.shared.execute(write, timeout: .seconds(30)).body.collect(upTo: 1 << 16)
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .milliseconds(500))
        reader.cancel()
        return received.withLock { $0 }
    }
}
