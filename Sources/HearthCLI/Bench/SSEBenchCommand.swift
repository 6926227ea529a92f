import ArgumentParser
import AsyncHTTPClient
import Foundation
import HearthCore
import NIOCore
import NIOHTTP1
import Synchronization

/// Many SSE listeners on one path, a steady stream of durable writes: how long from a write's request
/// to each listener's delivery.
struct SSEBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sse",
        abstract: "Write-to-delivery latency with many event-stream listeners on one path."
    )

    @Option(help: "The server to measure.")
    var url = "http://127.0.0.1:9000"

    @Option(help: "The admin secret (default: $HEARTH_ADMIN_SECRET).")
    var secret: String?

    @Option(help: "Event-stream listeners on the path.")
    var listeners = 1000

    @Option(help: "Writes per second.")
    var rate = 100

    @Option(help: "Seconds of writing.")
    var seconds = 10

    @Option(help: "The location written and listened to.")
    var path = "/bench/sse"

    func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: listeners + 16)
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(Int64(seconds + 60)))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            try await measure(client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    func measure(_ client: HTTPClient) async throws {
        let secret = self.secret ?? ProcessInfo.processInfo.environment["HEARTH_ADMIN_SECRET"] ?? ""

        let location = "\(url)\(path).json"
        var put = HTTPClientRequest(url: location)
        put.method = .PUT
        put.headers.add(name: "Authorization", value: "Bearer \(secret)")
        put.body = .bytes(ByteBuffer(string: #"{"seq":0,"t":0}"#))
        let reset = try await client.execute(put, timeout: .seconds(10))
        guard reset.status == .ok else {
            throw CLIError("PUT \(location) answered \(reset.status.code); is the server running and is --secret right?")
        }

        let shared = Shared()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<listeners {
                group.addTask {
                    var request = HTTPClientRequest(url: location)
                    request.headers.add(name: "Accept", value: "text/event-stream")
                    request.headers.add(name: "Authorization", value: "Bearer \(secret)")
                    let response = try await client.execute(request, timeout: .seconds(Int64(seconds + 60)))
                    var pending = ""
                    var first = true
                    for try await chunk in response.body {
                        let arrived = wallMicroseconds()
                        pending += String(buffer: chunk)
                        while let end = pending.range(of: "\n\n") {
                            let event = pending[..<end.lowerBound]
                            pending.removeSubrange(..<end.upperBound)
                            if first {
                                first = false
                                shared.connected.add(1, ordering: .relaxed)
                                continue
                            }
                            guard let sent = SSEBenchCommand.timestamp(in: event) else { continue }
                            if sent < 0 { return }  // the stop marker
                            shared.latencies.withLock { $0.add(arrived - sent) }
                        }
                    }
                }
            }
            // Wait until every listener has its initial snapshot.
            let deadline = ContinuousClock.now + .seconds(60)
            while shared.connected.load(ordering: .relaxed) < listeners {
                guard ContinuousClock.now < deadline else {
                    throw CLIError("only \(shared.connected.load(ordering: .relaxed)) of \(listeners) listeners connected")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            FileHandle.standardError.write(Data("\(listeners) listeners connected; writing \(rate)/s for \(seconds) s\n".utf8))
            var writes = LatencyStatistics()
            let interval = Duration.nanoseconds(1_000_000_000 / Int64(rate))
            var next = ContinuousClock.now
            for seq in 1...(rate * seconds) {
                next += interval
                var request = put
                let sent = wallMicroseconds()
                request.body = .bytes(ByteBuffer(string: "{\"seq\":\(seq),\"t\":\(sent)}"))
                let response = try await client.execute(request, timeout: .seconds(10))
                guard response.status == .ok else { throw CLIError("a write answered \(response.status.code)") }
                _ = try await response.body.collect(upTo: 1 << 16)
                writes.add(wallMicroseconds() - sent)
                if seq % rate == 0 { FileHandle.standardError.write(Data("\r\(seq / rate) s".utf8)) }
                try await Task.sleep(until: next, clock: .continuous)
            }
            var stop = put
            stop.body = .bytes(ByteBuffer(string: #"{"seq":-1,"t":-1}"#))
            _ = try await client.execute(stop, timeout: .seconds(10))
            try await group.waitForAll()
            let delivered = shared.latencies.withLock { $0 }
            let expected = listeners * rate * seconds
            print("""

                SSE fan-out: \(listeners) listeners on \(path), \(rate) durable writes/s for \(seconds) s
                  write acknowledged:   \(writes.summary)
                  write-to-delivery:    \(delivered.summary)
                  deliveries:           \(delivered.samples.count) of \(expected) expected \
                (\(delivered.samples.count * 100 / max(expected, 1))%), \
                \(delivered.samples.count / max(seconds, 1)) events/s
                """)
        }
    }

    /// What the listener tasks report to the coordinator.
    final class Shared: Sendable {
        let latencies = Mutex(LatencyStatistics())
        let connected = Atomic<Int>(0)
    }

    /// The `t` field of an event's data: `…"t":123}`.
    static func timestamp(in event: Substring) -> Int64? {
        guard let range = event.range(of: "\"t\":") else { return nil }
        let digits = event[range.upperBound...].prefix { $0 == "-" || $0.isNumber }
        return Int64(digits)
    }
}
